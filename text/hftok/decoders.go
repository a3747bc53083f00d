package hftok

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// decoder is one of HF's decoders: it rewrites the list of token strings
// (decode_chain); Decode joins what the last one returns.
type decoder interface {
	decodeChain(tokens []string) []string
	// token returns what the decoder makes of one token in the middle of
	// a text (for TokenBytes): it may be bytes that are not valid UTF-8.
	token(tok string) string
}

// decoderSeq runs its decoders in order (HF's Sequence).
type decoderSeq []decoder

func (d decoderSeq) decodeChain(tokens []string) []string {
	for _, x := range d {
		tokens = x.decodeChain(tokens)
	}
	return tokens
}

func (d decoderSeq) token(tok string) string {
	for _, x := range d {
		tok = x.token(tok)
	}
	return tok
}

// byteLevelDecoder is HF's ByteLevel decoder: every token's byte-level
// spelling back to bytes (a token with a character outside the byte-level
// alphabet, such as an added token, as its own UTF-8), all of them joined
// and made valid UTF-8 (see appendLossy).
type byteLevelDecoder struct{}

func (byteLevelDecoder) decodeChain(tokens []string) []string {
	var raw []byte
	for _, tok := range tokens {
		raw = appendByteLevel(raw, tok)
	}
	return []string{string(appendLossy(make([]byte, 0, len(raw)), raw))}
}

func (byteLevelDecoder) token(tok string) string { return string(appendByteLevel(nil, tok)) }

func appendByteLevel(dst []byte, tok string) []byte {
	if b, ok := byteLevelDecode(tok); ok {
		return append(dst, b...)
	}
	return append(dst, tok...)
}

// byteFallbackDecoder is HF's ByteFallback: runs of <0xXX> tokens become
// their bytes, or, when those are not valid UTF-8, one U+FFFD per byte (as
// HF's Rust library does; its JavaScript port substitutes per maximal
// invalid subsequence instead).
type byteFallbackDecoder struct{}

// fallbackByte returns the byte of a <0xXX> token.
func fallbackByte(tok string) (byte, bool) {
	if len(tok) != 6 || !strings.HasPrefix(tok, "<0x") || tok[5] != '>' {
		return 0, false
	}
	v, err := strconv.ParseUint(tok[3:5], 16, 8)
	return byte(v), err == nil
}

func (byteFallbackDecoder) decodeChain(tokens []string) []string {
	out := make([]string, 0, len(tokens))
	var pending []byte
	flush := func() {
		if len(pending) == 0 {
			return
		}
		if utf8.Valid(pending) {
			out = append(out, string(pending))
		} else {
			for range pending {
				out = append(out, "\uFFFD")
			}
		}
		pending = pending[:0]
	}
	for _, tok := range tokens {
		if b, ok := fallbackByte(tok); ok {
			pending = append(pending, b)
			continue
		}
		flush()
		out = append(out, tok)
	}
	flush()
	return out
}

func (byteFallbackDecoder) token(tok string) string {
	if b, ok := fallbackByte(tok); ok {
		return string([]byte{b})
	}
	return tok
}

// fuseDecoder is HF's Fuse: all tokens joined into one.
type fuseDecoder struct{}

func (fuseDecoder) decodeChain(tokens []string) []string {
	return []string{strings.Join(tokens, "")}
}

func (fuseDecoder) token(tok string) string { return tok }

// stripDecoder is HF's Strip decoder: up to start copies of content at the
// beginning of each token, and up to stop at its end, are removed.
type stripDecoder struct {
	content     rune
	start, stop int
}

func (d stripDecoder) decodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		chars := []rune(tok)
		lo := 0
		for k := 0; k < d.start && k < len(chars) && chars[k] == d.content; k++ {
			lo = k + 1
		}
		hi := len(chars)
		for k := 0; k < d.stop; k++ {
			idx := len(chars) - k - 1
			if idx < 0 || chars[idx] != d.content {
				break
			}
			hi = idx
		}
		if hi < lo {
			hi = lo
		}
		out[i] = string(chars[lo:hi])
	}
	return out
}

func (stripDecoder) token(tok string) string { return tok }

// replaceDecoder is HF's Replace decoder: the pattern replaced in every
// token.
type replaceDecoder struct{ replace }

func (d replaceDecoder) decodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		out[i] = d.normalize(tok)
	}
	return out
}

func (d replaceDecoder) token(tok string) string { return d.normalize(tok) }

// metaspaceDecoder is HF's Metaspace decoder: the replacement character
// becomes a space, except in the first token (unless prepend_scheme is
// never), where it is dropped.
type metaspaceDecoder struct {
	rep    rune
	scheme prependScheme
}

func (d metaspaceDecoder) decodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		var b strings.Builder
		for _, r := range tok {
			if r == d.rep {
				if i == 0 && d.scheme != prependNever {
					continue
				}
				r = ' '
			}
			b.WriteRune(r)
		}
		out[i] = b.String()
	}
	return out
}

func (d metaspaceDecoder) token(tok string) string {
	return strings.ReplaceAll(tok, string(d.rep), " ")
}

// wordPieceDecoder is HF's WordPiece decoder: tokens after the first lose
// the continuation prefix or get a space before them; with cleanup, the
// spaces before punctuation and contractions go (HF's cleanup list).
type wordPieceDecoder struct {
	prefix  string
	cleanup bool
}

// wordPieceCleanupPairs are applied one after the other, as HF's cleanup.
var wordPieceCleanupPairs = [][2]string{
	{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
	{" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
}

func (d wordPieceDecoder) decodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		if i != 0 {
			if rest, ok := strings.CutPrefix(tok, d.prefix); ok {
				tok = rest
			} else {
				tok = " " + tok
			}
		}
		if d.cleanup {
			for _, p := range wordPieceCleanupPairs {
				tok = strings.ReplaceAll(tok, p[0], p[1])
			}
		}
		out[i] = tok
	}
	return out
}

func (d wordPieceDecoder) token(tok string) string {
	if rest, ok := strings.CutPrefix(tok, d.prefix); ok {
		return rest
	}
	return " " + tok
}

// bpeDecoder is HF's BPEDecoder: the end-of-word suffix becomes a space
// (nothing in the last token).
type bpeDecoder struct{ suffix string }

func (d bpeDecoder) decodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		rep := " "
		if i == len(tokens)-1 {
			rep = ""
		}
		out[i] = strings.ReplaceAll(tok, d.suffix, rep)
	}
	return out
}

func (d bpeDecoder) token(tok string) string { return strings.ReplaceAll(tok, d.suffix, " ") }

// parseDecoder builds the decoder of tokenizer.json (nil for null).
func parseDecoder(raw json.RawMessage, where string) (decoder, error) {
	if isNull(raw) {
		return nil, nil
	}
	var t typed
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	at := fmt.Sprintf("%s (%s)", where, t.Type)
	switch t.Type {
	case "ByteLevel":
		return byteLevelDecoder{}, nil
	case "ByteFallback":
		return byteFallbackDecoder{}, nil
	case "Fuse":
		return fuseDecoder{}, nil
	case "Strip":
		var st struct {
			Content string `json:"content"`
			Start   int    `json:"start"`
			Stop    int    `json:"stop"`
		}
		if err := json.Unmarshal(raw, &st); err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		if utf8.RuneCountInString(st.Content) != 1 || st.Start < 0 || st.Stop < 0 {
			return nil, fmt.Errorf("%s: want one content character and non-negative start and stop", at)
		}
		r, _ := utf8.DecodeRuneInString(st.Content)
		return stripDecoder{r, st.Start, st.Stop}, nil
	case "Replace":
		n, err := parseNormalizer(raw, where)
		if err != nil {
			return nil, err
		}
		return replaceDecoder{n.(replace)}, nil
	case "Metaspace":
		var ms struct {
			Replacement    string  `json:"replacement"`
			PrependScheme  *string `json:"prepend_scheme"`
			AddPrefixSpace *bool   `json:"add_prefix_space"`
		}
		if err := json.Unmarshal(raw, &ms); err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		st, err := metaspace(ms.Replacement, ms.PrependScheme, ms.AddPrefixSpace)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		r, _ := utf8.DecodeRuneInString(st.rep)
		return metaspaceDecoder{r, st.scheme}, nil
	case "WordPiece":
		wp := struct {
			Prefix  *string `json:"prefix"`
			Cleanup *bool   `json:"cleanup"`
		}{}
		if err := json.Unmarshal(raw, &wp); err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		d := wordPieceDecoder{prefix: "##", cleanup: wp.Cleanup == nil || *wp.Cleanup}
		if wp.Prefix != nil {
			d.prefix = *wp.Prefix
		}
		return d, nil
	case "BPEDecoder":
		bd := struct {
			Suffix *string `json:"suffix"`
		}{}
		if err := json.Unmarshal(raw, &bd); err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		d := bpeDecoder{suffix: "</w>"}
		if bd.Suffix != nil {
			d.suffix = *bd.Suffix
		}
		return d, nil
	case "Sequence":
		var seq struct {
			Decoders []json.RawMessage `json:"decoders"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		var out decoderSeq
		for i, sub := range seq.Decoders {
			d, err := parseDecoder(sub, fmt.Sprintf("%s.decoders[%d]", where, i))
			if err != nil {
				return nil, err
			}
			if d != nil {
				out = append(out, d)
			}
		}
		if len(out) == 1 {
			return out[0], nil
		}
		return out, nil
	default:
		return nil, fmt.Errorf("%s: unsupported decoder type %q", where, t.Type)
	}
}
