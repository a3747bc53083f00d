package hftok

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// piece is a pre-token.
type piece struct {
	s string
	// first: the piece begins where the input begins (what Metaspace's
	// prepend_scheme "first" asks).
	first bool
}

// preStep is one pre-tokenizer: it appends the pieces of p to dst.
type preStep interface {
	split(dst []piece, p piece, offs [][2]int) ([]piece, [][2]int)
}

// splitBehavior is what a split does with the pattern's matches (HF's
// SplitDelimiterBehavior).
type splitBehavior int

const (
	behaviorRemoved splitBehavior = iota
	behaviorIsolated
	behaviorMergedWithPrevious
	behaviorMergedWithNext
	behaviorContiguous
)

var behaviors = map[string]splitBehavior{
	"Removed":            behaviorRemoved,
	"Isolated":           behaviorIsolated,
	"MergedWithPrevious": behaviorMergedWithPrevious,
	"MergedWithNext":     behaviorMergedWithNext,
	"Contiguous":         behaviorContiguous,
}

// cut appends the pieces of p.s as HF's NormalizedString::split makes them
// from the matches ms (sorted, non-overlapping): list the matches and the
// gaps between them as (span, isMatch), flip isMatch when inverted, then
// apply the behavior.
func cut(dst []piece, p piece, ms [][2]int, behavior splitBehavior, invert bool) []piece {
	s := p.s
	add := func(start, end int) {
		if end > start {
			dst = append(dst, piece{s[start:end], p.first && start == 0})
		}
	}
	if behavior == behaviorIsolated {
		// Every match and every gap is a piece (the hot path).
		prev := 0
		for _, m := range ms {
			add(prev, m[0])
			add(m[0], m[1])
			prev = m[1]
		}
		add(prev, len(s))
		return dst
	}
	if behavior == behaviorRemoved {
		// Keep the gaps, or with invert the matches (GPT-4's files).
		prev := 0
		for _, m := range ms {
			if invert {
				add(m[0], m[1])
			} else {
				add(prev, m[0])
			}
			prev = m[1]
		}
		if !invert {
			add(prev, len(s))
		}
		return dst
	}
	type span struct {
		start, end int
		match      bool
	}
	var spans []span
	prev := 0
	for _, m := range ms {
		if m[0] > prev {
			spans = append(spans, span{prev, m[0], invert})
		}
		spans = append(spans, span{m[0], m[1], !invert})
		prev = m[1]
	}
	if prev < len(s) {
		spans = append(spans, span{prev, len(s), invert})
	}
	var out []span
	switch behavior {
	case behaviorRemoved:
		for _, sp := range spans {
			if !sp.match {
				out = append(out, sp)
			}
		}
	case behaviorContiguous:
		prevMatch := false
		for k, sp := range spans {
			if k > 0 && sp.match == prevMatch {
				out[len(out)-1].end = sp.end
			} else {
				out = append(out, sp)
			}
			prevMatch = sp.match
		}
	case behaviorMergedWithPrevious:
		prevMatch := false
		for k, sp := range spans {
			if k > 0 && sp.match && !prevMatch {
				out[len(out)-1].end = sp.end
			} else {
				out = append(out, sp)
			}
			prevMatch = sp.match
		}
	case behaviorMergedWithNext:
		prevMatch := false
		for k := len(spans) - 1; k >= 0; k-- {
			sp := spans[k]
			if k < len(spans)-1 && sp.match && !prevMatch {
				out[len(out)-1].start = sp.start
			} else {
				out = append(out, sp)
			}
			prevMatch = sp.match
		}
		for a, b := 0, len(out)-1; a < b; a, b = a+1, b-1 {
			out[a], out[b] = out[b], out[a]
		}
	}
	for _, sp := range out {
		add(sp.start, sp.end)
	}
	return dst
}

// charMatches appends the spans of the characters of s that f accepts, one
// match per character (HF's Pattern for a char predicate).
func charMatches(dst [][2]int, s string, f func(rune) bool) [][2]int {
	for i, r := range s {
		if f(r) {
			dst = append(dst, [2]int{i, i + utf8.RuneLen(r)})
		}
	}
	return dst
}

// splitStep is HF's Split pre-tokenizer.
type splitStep struct {
	pat      *pattern
	behavior splitBehavior
	invert   bool
}

func (st *splitStep) split(dst []piece, p piece, offs [][2]int) ([]piece, [][2]int) {
	offs = st.pat.findAll(offs[:0], p.s)
	return cut(dst, p, offs, st.behavior, st.invert), offs
}

// predicateStep splits on the characters a predicate accepts (Digits,
// Punctuation, WhitespaceSplit, CharDelimiterSplit).
type predicateStep struct {
	accept   func(rune) bool
	behavior splitBehavior
}

func (st *predicateStep) split(dst []piece, p piece, offs [][2]int) ([]piece, [][2]int) {
	offs = charMatches(offs[:0], p.s, st.accept)
	return cut(dst, p, offs, st.behavior, false), offs
}

// isNumeric is Rust's char::is_numeric: general category Nd, Nl or No.
func isNumeric(r rune) bool { return unicode.IsNumber(r) }

// isPunctuation is HF's punctuation test: ASCII punctuation (symbols
// included) or a Unicode punctuation character.
func isPunctuation(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= '!' && r <= '/' || r >= ':' && r <= '@' || r >= '[' && r <= '`' || r >= '{' && r <= '~'
	}
	return unicode.IsPunct(r)
}

// isRegexWord is \w of Rust's regex crate: Alphabetic, Mark,
// Decimal_Number, Connector_Punctuation and Join_Control.
func isRegexWord(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_'
	}
	return unicode.In(r, unicode.L, unicode.Nl, unicode.Other_Alphabetic, unicode.M, unicode.Nd, unicode.Pc, unicode.Join_Control)
}

// whitespaceStep is HF's Whitespace pre-tokenizer: the matches of
// \w+|[^\w\s]+, everything else dropped.
type whitespaceStep struct{}

func (whitespaceStep) split(dst []piece, p piece, offs [][2]int) ([]piece, [][2]int) {
	s := p.s
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if isWhiteSpace(r) {
			i += w
			continue
		}
		word := isRegexWord(r)
		j := i + w
		for j < len(s) {
			r2, w2 := utf8.DecodeRuneInString(s[j:])
			if isRegexWord(r2) != word || (!word && isWhiteSpace(r2)) {
				break
			}
			j += w2
		}
		dst = append(dst, piece{s[i:j], p.first && i == 0})
		i = j
	}
	return dst, offs
}

// bertStep is HF's BertPreTokenizer: split on whitespace (removed), then
// on punctuation (isolated).
type bertStep struct{}

func (bertStep) split(dst []piece, p piece, offs [][2]int) ([]piece, [][2]int) {
	offs = charMatches(offs[:0], p.s, isWhiteSpace)
	start := len(dst)
	dst = cut(dst, p, offs, behaviorRemoved, false)
	words := append([]piece(nil), dst[start:]...)
	dst = dst[:start]
	for _, w := range words {
		offs = charMatches(offs[:0], w.s, isPunctuation)
		dst = cut(dst, w, offs, behaviorIsolated, false)
	}
	return dst, offs
}

// fixedLengthStep is HF's FixedLength: pieces of length characters.
type fixedLengthStep struct{ length int }

func (st fixedLengthStep) split(dst []piece, p piece, offs [][2]int) ([]piece, [][2]int) {
	s := p.s
	start, n := 0, 0
	for i := range s {
		if n == st.length {
			dst = append(dst, piece{s[start:i], p.first && start == 0})
			start, n = i, 0
		}
		n++
	}
	if start < len(s) {
		dst = append(dst, piece{s[start:], p.first && start == 0})
	}
	return dst, offs
}

// byteLevelStep is HF's ByteLevel pre-tokenizer. When it is the last step
// before a BPE model, mapping the bytes to byte-level runes is left to the
// model, which works on raw bytes (encode false).
type byteLevelStep struct {
	addPrefixSpace bool
	useRegex       bool
	encode         bool
}

func (b *byteLevelStep) split(dst []piece, p piece, offs [][2]int) ([]piece, [][2]int) {
	s := p.s
	if b.addPrefixSpace && !strings.HasPrefix(s, " ") {
		s = " " + s
	}
	start := len(dst)
	if !b.useRegex {
		dst = append(dst, piece{s, p.first})
	} else {
		offs = findAll(offs[:0], s, matchGPT2)
		for _, m := range offs {
			dst = append(dst, piece{s[m[0]:m[1]], p.first && m[0] == 0})
		}
	}
	if b.encode {
		for i := start; i < len(dst); i++ {
			dst[i].s = byteLevelEncode(dst[i].s)
		}
	}
	return dst, offs
}

// prependScheme is Metaspace's prepend_scheme.
type prependScheme int

const (
	prependAlways prependScheme = iota
	prependNever
	prependFirst
)

// metaspaceStep is HF's Metaspace pre-tokenizer: spaces become the
// replacement character, which is prepended as the scheme says; with split
// the piece is cut before every replacement character.
type metaspaceStep struct {
	rep        string
	scheme     prependScheme
	splitOnRep bool
}

func (m *metaspaceStep) split(dst []piece, p piece, offs [][2]int) ([]piece, [][2]int) {
	s := strings.ReplaceAll(p.s, " ", m.rep)
	if !strings.HasPrefix(s, m.rep) && (m.scheme == prependAlways || m.scheme == prependFirst && p.first) {
		s = m.rep + s
	}
	if !m.splitOnRep {
		return append(dst, piece{s, p.first}), offs
	}
	offs = offs[:0]
	for i := 0; ; {
		j := strings.Index(s[i:], m.rep)
		if j < 0 {
			break
		}
		offs = append(offs, [2]int{i + j, i + j + len(m.rep)})
		i += j + len(m.rep)
	}
	return cut(dst, piece{s, p.first}, offs, behaviorMergedWithNext, false), offs
}

// preTokenizer runs its steps in order, each on every piece of the previous.
type preTokenizer struct {
	steps []preStep
}

// typed is the "type" field every component has.
type typed struct {
	Type string `json:"type"`
}

// isNull reports whether a component is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw)
	return len(s) == 0 || string(s) == "null"
}

// parsePreTokenizer builds the pre-tokenizer (nil for null).
func parsePreTokenizer(raw json.RawMessage) (*preTokenizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	pt := &preTokenizer{}
	if err := pt.add(raw, "pre_tokenizer"); err != nil {
		return nil, err
	}
	if len(pt.steps) == 0 {
		return nil, nil
	}
	return pt, nil
}

// lastByteLevel returns the ByteLevel step that ends the pre-tokenizer, or
// nil.
func (pt *preTokenizer) lastByteLevel() *byteLevelStep {
	if pt == nil || len(pt.steps) == 0 {
		return nil
	}
	b, _ := pt.steps[len(pt.steps)-1].(*byteLevelStep)
	return b
}

func (pt *preTokenizer) add(raw json.RawMessage, where string) error {
	var t typed
	if err := json.Unmarshal(raw, &t); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	at := fmt.Sprintf("%s (%s)", where, t.Type)
	switch t.Type {
	case "Sequence":
		var seq struct {
			PreTokenizers []json.RawMessage `json:"pretokenizers"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		for i, sub := range seq.PreTokenizers {
			if err := pt.add(sub, fmt.Sprintf("%s.pretokenizers[%d]", where, i)); err != nil {
				return err
			}
		}
	case "ByteLevel":
		var bl struct {
			AddPrefixSpace *bool `json:"add_prefix_space"`
			UseRegex       *bool `json:"use_regex"`
		}
		if err := json.Unmarshal(raw, &bl); err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		// use_regex defaults to true, as in HF; add_prefix_space, which HF
		// requires, to false, as tokenizers.js reads a file without it.
		pt.steps = append(pt.steps, &byteLevelStep{
			addPrefixSpace: bl.AddPrefixSpace != nil && *bl.AddPrefixSpace,
			useRegex:       bl.UseRegex == nil || *bl.UseRegex,
			encode:         true,
		})
	case "Split":
		var sp struct {
			Pattern  json.RawMessage `json:"pattern"`
			Behavior string          `json:"behavior"`
			Invert   bool            `json:"invert"`
		}
		if err := json.Unmarshal(raw, &sp); err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		b, ok := behaviors[sp.Behavior]
		if !ok {
			return fmt.Errorf("%s: unsupported behavior %q", at, sp.Behavior)
		}
		pat, err := parsePatternJSON(sp.Pattern)
		if err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		pt.steps = append(pt.steps, &splitStep{pat: pat, behavior: b, invert: sp.Invert})
	case "Metaspace":
		var ms struct {
			Replacement    string  `json:"replacement"`
			PrependScheme  *string `json:"prepend_scheme"`
			AddPrefixSpace *bool   `json:"add_prefix_space"`
			Split          *bool   `json:"split"`
		}
		if err := json.Unmarshal(raw, &ms); err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		st, err := metaspace(ms.Replacement, ms.PrependScheme, ms.AddPrefixSpace)
		if err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		st.splitOnRep = ms.Split == nil || *ms.Split
		pt.steps = append(pt.steps, st)
	case "Digits":
		var d struct {
			Individual bool `json:"individual_digits"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		b := behaviorContiguous
		if d.Individual {
			b = behaviorIsolated
		}
		pt.steps = append(pt.steps, &predicateStep{accept: isNumeric, behavior: b})
	case "Punctuation":
		var p struct {
			Behavior *string `json:"behavior"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		b := behaviorIsolated
		if p.Behavior != nil {
			var ok bool
			if b, ok = behaviors[*p.Behavior]; !ok {
				return fmt.Errorf("%s: unsupported behavior %q", at, *p.Behavior)
			}
		}
		pt.steps = append(pt.steps, &predicateStep{accept: isPunctuation, behavior: b})
	case "Whitespace":
		pt.steps = append(pt.steps, whitespaceStep{})
	case "WhitespaceSplit":
		pt.steps = append(pt.steps, &predicateStep{accept: isWhiteSpace, behavior: behaviorRemoved})
	case "BertPreTokenizer":
		pt.steps = append(pt.steps, bertStep{})
	case "CharDelimiterSplit":
		var d struct {
			Delimiter string `json:"delimiter"`
		}
		if err := json.Unmarshal(raw, &d); err != nil || utf8.RuneCountInString(d.Delimiter) != 1 {
			return fmt.Errorf("%s: want a one-character delimiter (%v)", at, err)
		}
		delim, _ := utf8.DecodeRuneInString(d.Delimiter)
		pt.steps = append(pt.steps, &predicateStep{accept: func(r rune) bool { return r == delim }, behavior: behaviorRemoved})
	case "FixedLength":
		d := struct {
			Length *int `json:"length"`
		}{}
		if err := json.Unmarshal(raw, &d); err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		n := 5
		if d.Length != nil {
			n = *d.Length
		}
		if n <= 0 {
			return fmt.Errorf("%s: length %d must be positive", at, n)
		}
		pt.steps = append(pt.steps, fixedLengthStep{n})
	default:
		return fmt.Errorf("%s: unsupported pre-tokenizer type %q", where, t.Type)
	}
	return nil
}

// metaspace reads the settings Metaspace shares with its decoder.
func metaspace(replacement string, scheme *string, addPrefixSpace *bool) (*metaspaceStep, error) {
	if utf8.RuneCountInString(replacement) != 1 {
		return nil, fmt.Errorf("replacement %q must be one character", replacement)
	}
	st := &metaspaceStep{rep: replacement, scheme: prependAlways}
	if scheme != nil {
		switch *scheme {
		case "always":
		case "never":
			st.scheme = prependNever
		case "first":
			st.scheme = prependFirst
		default:
			return nil, fmt.Errorf("unsupported prepend_scheme %q", *scheme)
		}
	}
	if addPrefixSpace != nil && !*addPrefixSpace {
		if st.scheme != prependNever && scheme != nil {
			return nil, fmt.Errorf("add_prefix_space false does not match prepend_scheme %q", *scheme)
		}
		st.scheme = prependNever
	}
	return st, nil
}

// scratch holds buffers reused across pre-tokenizations.
type scratch struct {
	a, b []piece
	offs [][2]int
}

// pieces returns the pre-tokens of p, in buffers of sc that stay valid
// until the next call with sc.
func (pt *preTokenizer) pieces(sc *scratch, p piece) []piece {
	cur := append(sc.a[:0], p)
	if pt == nil {
		sc.a = cur
		return cur
	}
	other := sc.b
	for _, st := range pt.steps {
		next := other[:0]
		for _, q := range cur {
			if q.s == "" {
				continue
			}
			next, sc.offs = st.split(next, q, sc.offs)
		}
		other, cur = cur, next
	}
	sc.a, sc.b = cur, other
	return cur
}
