package tokenizer

import (
	"slices"
	"testing"
)

// FuzzRoundTrip checks, for arbitrary bytes, that Encode and EncodeOrdinary
// round-trip through Decode, that EncodeOrdinary emits no special token and
// agrees with the textbook merge loop, and that a chat containing the text
// renders and decodes to the template around it.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{
		"", "a", "√", "#_OX√P#\n#P__S#", "Player: (2, 3)", "<think>x</think><answer>Up || Left</answer>",
		"<|end|><|assistant|>", "\xff\xfe", "a  b\t\n\n c", "12 + 345 = 357",
	} {
		f.Add(s)
	}
	tok := trained()
	f.Fuzz(func(t *testing.T, s string) {
		checkRoundTrip(t, tok, s)
		if got, want := tok.EncodeOrdinary(s), referenceEncode(tok, s); !slices.Equal(got, want) {
			t.Fatalf("EncodeOrdinary(%q) = %v, reference %v", s, got, want)
		}
		ids, err := tok.Render([]Message{{RoleUser, s}}, true)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := mustDecode(t, tok, ids), "<|bos|><|user|>"+s+"<|end|><|assistant|>"; got != want {
			t.Fatalf("Decode(Render) = %q, want %q", got, want)
		}
	})
}
