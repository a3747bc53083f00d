package tokenizer

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultGridCells are the runes that make up grid lines by default: the
// Sokoban symbols # _ O √ X P S and the FrozenLake goal G (FrozenLake's other
// symbols P _ O X √ are among the Sokoban ones).
const DefaultGridCells = "#_O√XPSG"

// pretokenRule names the pre-tokenisation rule in saved files.
const pretokenRule = "agentrl-v1"

// Character classes used by the pre-tokenizer.
const (
	classOther  = iota // punctuation, symbols, invalid bytes
	classLetter        // letters and combining marks
	classNumber        // digits and other numbers
	classSpace         // whitespace other than '\n'
)

var asciiClass [128]uint8

func init() {
	for c := 0; c < 128; c++ {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			asciiClass[c] = classLetter
		case c >= '0' && c <= '9':
			asciiClass[c] = classNumber
		case c == ' ', c == '\t', c == '\r', c == '\v', c == '\f':
			asciiClass[c] = classSpace
		default:
			asciiClass[c] = classOther
		}
	}
}

// runeAt decodes the rune at s[i:] and returns its class and byte length.
// An invalid UTF-8 byte is one rune of class classOther and length 1.
func runeAt(s string, i int) (class uint8, size int) {
	c := s[i]
	if c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && size == 1 {
		return classOther, 1
	}
	switch {
	case unicode.IsLetter(r) || unicode.IsMark(r):
		return classLetter, size
	case unicode.IsNumber(r):
		return classNumber, size
	case unicode.IsSpace(r):
		return classSpace, size
	}
	return classOther, size
}

// pretokenizer splits text into the pieces that BPE merges stay within.
// The zero value splits with the GPT-2-like rule only (no grid lines).
type pretokenizer struct {
	gridCells  string // as configured; "" disables grid-line splitting
	gridASCII  [utf8.RuneSelf]bool
	gridOthers []rune
}

// newPretokenizer builds a pre-tokenizer whose grid lines are made of the
// runes of gridCells ("" disables grid-line splitting).
func newPretokenizer(gridCells string) (*pretokenizer, error) {
	p := &pretokenizer{gridCells: gridCells}
	if !utf8.ValidString(gridCells) {
		return nil, fmt.Errorf("grid cells %q are not valid UTF-8", gridCells)
	}
	for _, r := range gridCells {
		switch {
		case r == '\n':
			return nil, fmt.Errorf("grid cells %q contain a newline", gridCells)
		case r < utf8.RuneSelf:
			p.gridASCII[r] = true
		default:
			p.gridOthers = append(p.gridOthers, r)
		}
	}
	return p, nil
}

// isGridLine reports whether line (no '\n') is non-empty and made only of
// grid-cell runes.
func (p *pretokenizer) isGridLine(line string) bool {
	if p.gridCells == "" || line == "" {
		return false
	}
	for i := 0; i < len(line); {
		c := line[i]
		if c < utf8.RuneSelf {
			if !p.gridASCII[c] {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(line[i:])
		if r == utf8.RuneError && size == 1 {
			return false
		}
		found := false
		for _, g := range p.gridOthers {
			if g == r {
				found = true
				break
			}
		}
		if !found {
			return false
		}
		i += size
	}
	return true
}

// split calls emit with each pre-token of s, in order. The pre-tokens are
// non-empty substrings of s whose concatenation is s.
func (p *pretokenizer) split(s string, emit func(string)) {
	for len(s) > 0 {
		if s[0] == '\n' {
			j := 1
			for j < len(s) && s[j] == '\n' {
				j++
			}
			emit(s[:j])
			s = s[j:]
			continue
		}
		line := s
		if nl := strings.IndexByte(s, '\n'); nl >= 0 {
			line = s[:nl]
		}
		p.splitLine(line, emit)
		s = s[len(line):]
	}
}

// splitLine pre-tokenizes one line (no '\n').
func (p *pretokenizer) splitLine(line string, emit func(string)) {
	if p.isGridLine(line) {
		for i := 0; i < len(line); {
			_, size := utf8.DecodeRuneInString(line[i:])
			emit(line[i : i+size])
			i += size
		}
		return
	}
	for i := 0; i < len(line); {
		start := i
		class, size := runeAt(line, i)
		if class == classSpace {
			// Find the end of the whitespace run and its last rune.
			j, last := i+size, i
			for j < len(line) {
				c, sz := runeAt(line, j)
				if c != classSpace {
					break
				}
				last = j
				j += sz
			}
			if j == len(line) || line[last] != ' ' {
				emit(line[i:j])
				i = j
				continue
			}
			// The run is followed by a word: its last space, a plain ' ',
			// becomes the word's prefix.
			if last > i {
				emit(line[i:last])
			}
			start = last
			i = last + 1
			class, size = runeAt(line, i)
		}
		i += size
		switch class {
		case classLetter, classOther:
			for i < len(line) {
				c, sz := runeAt(line, i)
				if c != class {
					break
				}
				i += sz
			}
		}
		emit(line[start:i])
	}
}
