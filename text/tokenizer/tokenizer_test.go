package tokenizer

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// trained returns a tokenizer trained once on the synthetic corpus.
var trained = sync.OnceValue(func() *Tokenizer {
	t, err := Train(trainingCorpus(1, 200_000), 512, TrainOptions{})
	if err != nil {
		panic(err)
	}
	return t
})

func mustDecode(t *testing.T, tok *Tokenizer, ids []int) string {
	t.Helper()
	s, err := tok.Decode(ids)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkRoundTrip checks the invariants every string must satisfy.
func checkRoundTrip(t *testing.T, tok *Tokenizer, s string) {
	t.Helper()
	ids := tok.Encode(s)
	if got := mustDecode(t, tok, ids); got != s {
		t.Fatalf("Decode(Encode(%q)) = %q", s, got)
	}
	ord := tok.EncodeOrdinary(s)
	if got := mustDecode(t, tok, ord); got != s {
		t.Fatalf("Decode(EncodeOrdinary(%q)) = %q", s, got)
	}
	for _, id := range ord {
		if IsSpecial(id) || id < 0 || id >= tok.VocabSize() {
			t.Fatalf("EncodeOrdinary(%q) emitted id %d", s, id)
		}
	}
	for _, id := range ids {
		if id < 0 || id >= tok.VocabSize() {
			t.Fatalf("Encode(%q) emitted id %d", s, id)
		}
		if IsSpecial(id) && id < ThinkID {
			t.Fatalf("Encode(%q) emitted control token %d", s, id)
		}
	}
}

var runePool = []rune("abcxyzXOPSG#_√ .,:;()<>/|\n\t0123456789éü漢字😀\u0301\u00a0")

func randomUTF8(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		switch rng.IntN(20) {
		case 0:
			b.WriteString(specialTexts[rng.IntN(NumSpecials)])
		case 1:
			b.WriteString("#_OX√P#")
		default:
			b.WriteRune(runePool[rng.IntN(len(runePool))])
		}
	}
	return b.String()
}

func TestRoundTripRandomBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, tok := range []*Tokenizer{New(), trained()} {
		for range 500 {
			b := make([]byte, rng.IntN(300))
			for i := range b {
				b[i] = byte(rng.UintN(256))
			}
			checkRoundTrip(t, tok, string(b))
		}
	}
}

func TestRoundTripRandomUTF8(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	tok := trained()
	for range 1000 {
		s := randomUTF8(rng, rng.IntN(200))
		if !utf8.ValidString(s) {
			t.Fatalf("generator produced invalid UTF-8 %q", s)
		}
		checkRoundTrip(t, tok, s)
	}
	// Long pieces go through the heap merge.
	long := strings.Repeat("Sokoban", 100) + strings.Repeat("=", 1000) + strings.Repeat("√", 300)
	checkRoundTrip(t, tok, long)
}

// referenceEncode is the textbook algorithm: pre-tokenize, then apply every
// merge in learned order, left to right, to each piece.
func referenceEncode(tok *Tokenizer, s string) []int {
	var out []int
	tok.pre.split(s, func(piece string) {
		ids := make([]int, len(piece))
		for i := range ids {
			ids[i] = int(piece[i])
		}
		for m, pair := range tok.merges {
			var next []int
			for i := 0; i < len(ids); i++ {
				if i+1 < len(ids) && ids[i] == int(pair[0]) && ids[i+1] == int(pair[1]) {
					next = append(next, FirstMergeID+m)
					i++
				} else {
					next = append(next, ids[i])
				}
			}
			ids = next
		}
		out = append(out, ids...)
	})
	return out
}

func TestEncodeMatchesReference(t *testing.T) {
	tok := trained()
	rng := rand.New(rand.NewPCG(9, 9))
	texts := trainingCorpus(99, 20_000)
	for range 300 {
		texts = append(texts, randomUTF8(rng, rng.IntN(100)))
	}
	for _, s := range texts {
		want := referenceEncode(tok, s)
		if got := tok.EncodeOrdinary(s); !slices.Equal(got, want) {
			t.Fatalf("EncodeOrdinary(%q)\n got %v\nwant %v", s, got, want)
		}
	}
	// The scan and heap merge loops agree on long pieces of every kind.
	pieces := []string{
		strings.Repeat("a", 500), strings.Repeat("ab", 300), strings.Repeat(" the", 200),
		strings.Repeat("√", 200), strings.Repeat("actions", 50),
	}
	for range 50 {
		var b strings.Builder
		for b.Len() < 400 {
			b.WriteString([]string{"the", "box", "Left", "||", " ", "√", "e", "s", "ion"}[rng.IntN(9)])
		}
		pieces = append(pieces, b.String())
	}
	for _, p := range pieces {
		if a, b := tok.bpeScan(p), tok.bpeHeap(p); !slices.Equal(a, b) {
			t.Fatalf("bpeScan and bpeHeap disagree on %q\n%v\n%v", p, a, b)
		}
	}
}

func TestPretokenize(t *testing.T) {
	pre, err := newPretokenizer(DefaultGridCells)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		in   string
		want []string
	}{
		{"#_OX#\n#P√S#", []string{"#", "_", "O", "X", "#", "\n", "#", "P", "√", "S", "#"}},
		{"Player: (2, 3)", []string{"Player", ":", " (", "2", ",", " 3", ")"}},
		{"Up || Left", []string{"Up", " ||", " Left"}},
		{"a  b", []string{"a", " ", " b"}},
		{"a \tb", []string{"a", " \t", "b"}},
		{"x  ", []string{"x", "  "}},
		{"State:\n\nOX", []string{"State", ":", "\n\n", "O", "X"}},
		{"OX is not a word", []string{"OX", " is", " not", " a", " word"}},
		{"12 apples", []string{"1", "2", " apples"}},
		{"naïve café", []string{"naïve", " café"}},
		{"a\xffb", []string{"a", "\xff", "b"}},
		{"# _ O", []string{"#", " _", " O"}},
		{"", nil},
	}
	for _, c := range cases {
		var got []string
		pre.split(c.in, func(p string) { got = append(got, p) })
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("split(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// Without grid cells a grid row is ordinary text.
	plain, _ := newPretokenizer("")
	var got []string
	plain.split("#_OX#", func(p string) { got = append(got, p) })
	if want := []string{"#_", "OX", "#"}; !reflect.DeepEqual(got, want) {
		t.Errorf("split without grid = %q, want %q", got, want)
	}
	// Pieces always concatenate to the input.
	rng := rand.New(rand.NewPCG(3, 3))
	for range 500 {
		s := randomUTF8(rng, 60)
		var b strings.Builder
		pre.split(s, func(p string) {
			if p == "" {
				t.Fatalf("empty piece in %q", s)
			}
			b.WriteString(p)
		})
		if b.String() != s {
			t.Fatalf("pieces of %q concatenate to %q", s, b.String())
		}
	}
}

func TestGridCellsAreOneTokenEach(t *testing.T) {
	tok := trained()
	grid := "######\n#_O√X#\n#P_S_#\n######"
	ids := tok.Encode(grid)
	// 24 cells and 3 newlines.
	if len(ids) != 27 {
		t.Fatalf("grid encodes to %d tokens, want 27: %v", len(ids), ids)
	}
	b, err := tok.TokenBytes(ids[10])
	if err != nil || string(b) != "√" {
		t.Fatalf("token 10 = %q, %v; want √", b, err)
	}
}

func TestDeterminism(t *testing.T) {
	corpus := trainingCorpus(5, 100_000)
	save := func(c []string) []byte {
		tok, err := Train(c, 600, TrainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := tok.Save(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	a, b := save(corpus), save(corpus)
	if !bytes.Equal(a, b) {
		t.Fatal("two trainings on the same corpus saved different files")
	}
	shuffled := slices.Clone(corpus)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) {
		shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
	})
	if !bytes.Equal(a, save(shuffled)) {
		t.Fatal("training depends on the order of the corpus")
	}
}

func TestTrainTieBreak(t *testing.T) {
	// "ab" and "cd" occur equally often: (a, b) has the smaller ids.
	tok, err := Train([]string{"ab\ncd\nab\ncd"}, FirstMergeID+1, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := [][2]int32{{'a', 'b'}}; !reflect.DeepEqual(tok.merges, want) {
		t.Fatalf("merges = %v, want %v", tok.merges, want)
	}
	// MinFrequency stops training early.
	tok, err = Train([]string{"ab cd"}, 1000, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tok.NumMerges() != 0 {
		t.Fatalf("pairs seen once were merged: %v", tok.merges)
	}
	tok, err = Train([]string{"ab cd"}, 1000, TrainOptions{MinFrequency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if tok.NumMerges() != 3 { // " c", ab, " cd"
		t.Fatalf("merges = %v, want 3", tok.merges)
	}
}

func TestTrainErrors(t *testing.T) {
	for _, c := range []struct {
		size int
		opts TrainOptions
	}{
		{FirstMergeID - 1, TrainOptions{}},
		{MaxVocabSize + 1, TrainOptions{}},
		{512, TrainOptions{MinFrequency: -1}},
		{512, TrainOptions{GridCells: "#\n"}},
		{512, TrainOptions{GridCells: "\xff"}},
	} {
		if _, err := Train([]string{"x"}, c.size, c.opts); err == nil {
			t.Errorf("Train(size %d, %+v) succeeded", c.size, c.opts)
		}
	}
}

func TestSpecialsAtomic(t *testing.T) {
	tok := trained()
	ids := tok.Encode("<think>hi</think> <answer>Up</answer>")
	if ids[0] != ThinkID || ids[len(ids)-1] != EndAnswerID || !slices.Contains(ids, EndThinkID) || !slices.Contains(ids, AnswerID) {
		t.Fatalf("tags not encoded as specials: %v", ids)
	}
	// Role and control text is ordinary text for Encode.
	for _, id := range []int{PadID, BOSID, EOSID, SystemID, UserID, AssistantID, EndID} {
		text, _ := SpecialText(id)
		if got := tok.Encode(text); slices.ContainsFunc(got, IsSpecial) {
			t.Errorf("Encode(%q) = %v contains a special", text, got)
		}
	}
	// EncodeOrdinary never emits tags.
	if got := tok.EncodeOrdinary("<think>x</think>"); slices.ContainsFunc(got, IsSpecial) {
		t.Errorf("EncodeOrdinary emitted a special: %v", got)
	}
	// No merge token spells out a special, even though the corpus is full
	// of tags.
	for id := FirstMergeID; id < tok.VocabSize(); id++ {
		b, _ := tok.TokenBytes(id)
		for _, s := range specialTexts {
			if strings.Contains(string(b), s) {
				t.Errorf("merge token %d %q contains special %q", id, b, s)
			}
		}
	}
	// Partial tags and adjacent tags.
	for _, s := range []string{"<think", "<thin>k>", "<<think>>", "</think></think>", "<answer><answer>"} {
		checkRoundTrip(t, tok, s)
	}
	if got := tok.Encode("<<think>>"); len(got) != 3 || got[1] != ThinkID {
		t.Errorf("Encode(<<think>>) = %v", got)
	}
	if got, ok := SpecialText(EndID); !ok || got != "<|end|>" {
		t.Errorf("SpecialText(EndID) = %q, %v", got, ok)
	}
	if _, ok := SpecialText(5); ok {
		t.Error("SpecialText(5) ok")
	}
}

func TestDecodeErrors(t *testing.T) {
	tok := New()
	for _, ids := range [][]int{{-1}, {FirstMergeID}, {1 << 40}} {
		if _, err := tok.Decode(ids); err == nil {
			t.Errorf("Decode(%v) succeeded", ids)
		}
		if _, err := tok.TokenBytes(ids[0]); err == nil {
			t.Errorf("TokenBytes(%d) succeeded", ids[0])
		}
	}
}

func TestConcurrentEncode(t *testing.T) {
	tok := trained()
	texts := trainingCorpus(11, 20_000)
	want := make([][]int, len(texts))
	for i, s := range texts {
		want[i] = referenceEncode(tok, s)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range texts {
				j := (i + g*7) % len(texts)
				if got := tok.EncodeOrdinary(texts[j]); !slices.Equal(got, want[j]) {
					t.Errorf("concurrent EncodeOrdinary(%q) differs", texts[j])
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestTokensPerChar(t *testing.T) {
	train := trainingCorpus(1, 200_000)
	held := corpora(2, 300)
	names := []string{"sokoban grid", "sokoban coords", "sokoban obs", "frozenlake grid", "user turn", "reply"}
	t.Logf("tokens/char (tokens/text) on held-out synthetic corpora; training corpus %d KB", len(strings.Join(train, ""))/1000)
	for _, split := range []bool{true, false} {
		for _, size := range []int{FirstMergeID, 512, 1024} {
			tok, err := Train(train, size, TrainOptions{NoGridSplit: !split})
			if err != nil {
				t.Fatal(err)
			}
			line := ""
			for _, n := range names {
				s := tok.Measure(held[n])
				line += "  " + n + " " + fmtStats(s)
				if size > FirstMergeID {
					if n != "sokoban grid" && n != "frozenlake grid" && s.TokensPerChar() >= 1 {
						t.Errorf("vocab %d split %v: %s tokens/char %.3f, want < 1", size, split, n, s.TokensPerChar())
					}
					if split && (n == "sokoban grid" || n == "frozenlake grid") && s.TokensPerChar() != 1 {
						// One token per cell and per newline.
						t.Errorf("vocab %d: %s tokens/char %.3f, want exactly 1", size, n, s.TokensPerChar())
					}
				}
			}
			t.Logf("vocab %4d (got %4d) gridsplit=%-5v%s", size, tok.VocabSize(), split, line)
		}
	}
}

func fmtStats(s CorpusStats) string {
	return fmt.Sprintf("%.3f (%.1f)", s.TokensPerChar(), s.TokensPerText())
}
