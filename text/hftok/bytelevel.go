package hftok

import (
	"unicode"
	"unicode/utf8"
)

// byteRune is GPT-2's bytes_to_unicode table: the printable bytes '!'..'~',
// 0xA1..0xAC and 0xAE..0xFF stand for themselves, and the 68 others, in
// increasing order, for U+0100, U+0101, ... U+0143. Byte-level vocabularies
// spell every token with these runes.
var byteRune [256]rune

// runeByte inverts byteRune: runeByte[r] is the byte that r stands for, or -1.
var runeByte [0x144]int16

func init() {
	for i := range runeByte {
		runeByte[i] = -1
	}
	n := rune(0)
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteRune[b] = rune(b)
		} else {
			byteRune[b] = 0x100 + n
			n++
		}
		runeByte[byteRune[b]] = int16(b)
	}
}

// byteLevelDecode maps a token spelled with byte-level runes back to the bytes
// it stands for. ok is false when some rune of tok is outside the byte-level
// alphabet (an added token such as "<|im_start|>" is inside it; one with a
// space or a non-Latin-1 rune is not).
func byteLevelDecode(tok string) (b []byte, ok bool) {
	b = make([]byte, 0, len(tok))
	for _, r := range tok {
		if r < 0 || int(r) >= len(runeByte) || runeByte[r] < 0 {
			return nil, false
		}
		b = append(b, byte(runeByte[r]))
	}
	return b, true
}

// byteLevelEncode spells raw bytes with byte-level runes, as HF's ByteLevel
// pre-tokenizer does before the model sees a piece.
func byteLevelEncode(s string) string {
	buf := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		buf = utf8.AppendRune(buf, byteRune[s[i]])
	}
	return string(buf)
}

// Character classes of the pre-tokenizer patterns: \p{L}, \p{N}, \s (Unicode
// White_Space, which is what Oniguruma's \s matches) and everything else.
// Invalid UTF-8 bytes, which HF never sees (its input is a Rust string), are
// one "other" character each.
type class uint8

const (
	clsOther class = iota
	clsLetter
	clsNumber
	clsSpace
)

var asciiClass [utf8.RuneSelf]class

func init() {
	for c := rune(0); c < utf8.RuneSelf; c++ {
		asciiClass[c] = classOfRune(c)
	}
}

func classOfRune(r rune) class {
	switch {
	case unicode.IsLetter(r):
		return clsLetter
	case unicode.IsNumber(r):
		return clsNumber
	case unicode.IsSpace(r):
		return clsSpace
	default:
		return clsOther
	}
}

// classAt returns the class and byte width of the character at s[i].
func classAt(s string, i int) (class, int) {
	c := s[i]
	if c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && w == 1 {
		return clsOther, 1
	}
	return classOfRune(r), w
}

// runEnd returns the end of the run of characters of class cls starting at i.
func runEnd(s string, i int, cls class) int {
	for i < len(s) {
		c, w := classAt(s, i)
		if c != cls {
			break
		}
		i += w
	}
	return i
}

// appendLossy appends b to dst as UTF-8, replacing each maximal ill-formed
// subsequence with U+FFFD, the way Rust's String::from_utf8_lossy and the
// WHATWG TextDecoder do (Unicode's "substitution of maximal subparts"): a
// truncated but well-begun sequence such as E4 BD becomes one U+FFFD, and an
// impossible byte such as FF or a stray continuation byte becomes one each.
func appendLossy(dst, b []byte) []byte {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		var need int
		lo, hi := byte(0x80), byte(0xBF) // range of the second byte
		switch {
		case c >= 0xC2 && c <= 0xDF:
			need = 1
		case c == 0xE0:
			need, lo = 2, 0xA0
		case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
			need = 2
		case c == 0xED:
			need, hi = 2, 0x9F
		case c == 0xF0:
			need, lo = 3, 0x90
		case c >= 0xF1 && c <= 0xF3:
			need = 3
		case c == 0xF4:
			need, hi = 3, 0x8F
		default:
			dst = append(dst, "\uFFFD"...)
			i++
			continue
		}
		j := i + 1
		for k := 0; k < need; k++ {
			if j >= len(b) || b[j] < lo || b[j] > hi {
				break
			}
			j++
			lo, hi = 0x80, 0xBF
		}
		if j-i == need+1 {
			dst = append(dst, b[i:j]...)
		} else {
			dst = append(dst, "\uFFFD"...)
		}
		i = j
	}
	return dst
}
