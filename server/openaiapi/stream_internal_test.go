package openaiapi

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// byteVocab is a vocabulary of the 256 bytes, a special token and a few
// multi-byte tokens.
type byteVocab struct{}

var multi = map[int]string{256: "<|end|>", 300: "ab", 301: "cd", 302: "€"}

func (byteVocab) VocabSize() int             { return 303 }
func (byteVocab) IsSpecialToken(id int) bool { return id == 256 }
func (byteVocab) TokenBytes(id int) ([]byte, error) {
	if id < 256 {
		return []byte{byte(id)}, nil
	}
	if t, ok := multi[id]; ok {
		return []byte(t), nil
	}
	return nil, fmt.Errorf("no token %d", id)
}

func ids(s string) []int {
	out := make([]int, len(s))
	for i := range len(s) {
		out[i] = int(s[i])
	}
	return out
}

func TestTextDeltas(t *testing.T) {
	s := &Server{vocab: byteVocab{}}
	ctx := context.Background()
	cases := []struct {
		name, text, prefix string
		ids                []int
		skip               bool
		want               []string
	}{
		{"plain", "hi", "", ids("hi"), true, []string{"h", "i"}},
		{"character over three tokens", "€a", "", ids("€a"), true, []string{"", "", "€", "a"}},
		{"multi-byte token", "x€", "", []int{'x', 302}, true, []string{"x", "€"}},
		{"stop token left out", "ab", "", []int{300, 'z'}, true, []string{"ab", ""}},
		{"special stop token skipped", "a", "", []int{'a', 256}, true, []string{"a", ""}},
		{"special kept", "a<|end|>", "", []int{'a', 256}, false, []string{"a", "<|end|>"}},
		{"stop string cuts a token", "abc", "", []int{300, 301}, true, []string{"ab", "c"}},
		{"stop string ends before a token", "ab", "", []int{300, 301, 'x'}, true, []string{"ab", "", ""}},
		{"text rewritten at the start", "Hi", "", ids("hi"), true, []string{"Hi", ""}},
		{"text rewritten later", "abXY", "", ids("abcd"), true, []string{"a", "b", "XY", ""}},
		{"echo", "Pab", "P", ids("ab"), true, []string{"Pa", "b"}},
		{"echo only", "P", "P", nil, true, []string{"P"}},
		{"echo rewritten", "Qab", "P", ids("ab"), true, []string{"Qab", ""}},
		{"no tokens", "", "", nil, true, []string{""}},
		{"invalid byte", "\x80a", "", ids("\x80a"), true, []string{"\x80", "a"}},
		{"cut character then ASCII", "\xe2a", "", ids("\xe2a"), true, []string{"", "\xe2a"}},
		{"cut character at the end", "a\xe2\x82", "", ids("a\xe2\x82"), true, []string{"a", "", "\xe2\x82"}},
	}
	for _, c := range cases {
		got, err := s.textDeltas(ctx, c.text, c.prefix, c.ids, c.skip)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: deltas %q, want %q", c.name, got, c.want)
		}
	}
}

// TestTextDeltasRandom checks, on random bytes, that the deltas
// concatenate to the text, that they cut it only between the characters
// (or invalid bytes) it decodes to, and that JSON encodes the deltas as it encodes the text (invalid bytes
// become U+FFFD the same way).
func TestTextDeltasRandom(t *testing.T) {
	s := &Server{vocab: byteVocab{}}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := rng.IntN(12)
		tokens := make([]int, n)
		var full strings.Builder
		for i := range tokens {
			switch r := rng.IntN(10); {
			case r < 2:
				tokens[i] = 0xC0 + rng.IntN(0x40) // a lead byte
			case r < 5:
				tokens[i] = 0x80 + rng.IntN(0x40) // a continuation byte
			case r < 6:
				tokens[i] = 300 + rng.IntN(3)
			default:
				tokens[i] = rng.IntN(256)
			}
			b, _ := byteVocab{}.TokenBytes(tokens[i])
			full.Write(b)
		}
		text := full.String()
		text = text[:rng.IntN(len(text)+1)] // a stop string cut it
		got, err := s.textDeltas(context.Background(), text, "", tokens, true)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "") != text || len(got) != max(1, n) {
			t.Fatalf("tokens %v text %q: deltas %q", tokens, text, got)
		}
		boundary := map[int]bool{0: true}
		for i := 0; i < len(text); {
			_, w := utf8.DecodeRuneInString(text[i:])
			i += w
			boundary[i] = true
		}
		var viaJSON strings.Builder
		cut := 0
		for i, d := range got {
			if cut += len(d); !boundary[cut] {
				t.Fatalf("tokens %v text %q: delta %d %q ends inside a character", tokens, text, i, d)
			}
			var back string
			data, _ := json.Marshal(d)
			json.Unmarshal(data, &back)
			viaJSON.WriteString(back)
		}
		var want string
		data, _ := json.Marshal(text)
		json.Unmarshal(data, &want)
		if viaJSON.String() != want || !utf8.ValidString(want) {
			t.Fatalf("tokens %v: deltas through JSON %q, text through JSON %q", tokens, viaJSON.String(), want)
		}
	}
}
