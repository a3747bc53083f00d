package onigre

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Class is a set of characters: the union of ranges, Unicode tables and
// nested classes, or the intersection of classes, possibly negated and
// case-folded. Characters below 128 are answered from a bitmap.
type Class struct {
	ranges []rng
	tables []*unicode.RangeTable
	subs   []*Class
	inter  []*Class
	neg    bool
	fold   bool

	ascii [2]uint64 // membership of the ASCII characters, final
	done  bool
	// bmp, when built, answers the Basic Multilingual Plane (the classes
	// the machine tests directly get one: Unicode tables are slow to
	// search character by character).
	bmp []uint64
}

type rng struct{ lo, hi rune }

func (c *Class) addRange(lo, hi rune) { c.ranges = append(c.ranges, rng{lo, hi}) }

func (c *Class) addProperty(p prop) {
	c.tables = append(c.tables, p.tables...)
	c.ranges = append(c.ranges, p.ranges...)
}

// finish fills the ASCII bitmap; it must be called once the class is built.
func (c *Class) finish() {
	c.done = false
	var bits [2]uint64
	for r := rune(0); r < utf8.RuneSelf; r++ {
		if c.slow(r) {
			bits[r>>6] |= 1 << (r & 63)
		}
	}
	c.ascii = bits
	c.done = true
}

// withFold returns the class matching also every case variant of its
// members, as Oniguruma's (?i) does for classes.
func (c *Class) withFold() *Class {
	f := &Class{subs: []*Class{c}, fold: true}
	f.finish()
	return f
}

// buildBMP fills the bitmap of the Basic Multilingual Plane.
func (c *Class) buildBMP() {
	if c.bmp == nil {
		c.bmp = c.bits()
	}
}

const bmpWords = 0x10000 / 64

// bits computes the class's membership bitmap over the Basic Multilingual
// Plane from its parts (walking Unicode tables by range, not testing every
// character).
func (c *Class) bits() []uint64 {
	if c.bmp != nil {
		return c.bmp
	}
	out := make([]uint64, bmpWords)
	set := func(lo, hi, stride rune) {
		hi = min(hi, 0xFFFF)
		for r := lo; r <= hi; r += stride {
			out[r>>6] |= 1 << (r & 63)
		}
	}
	if len(c.inter) > 0 {
		for i := range out {
			out[i] = ^uint64(0)
		}
		for _, o := range c.inter {
			ob := o.bits()
			for i := range out {
				out[i] &= ob[i]
			}
		}
	} else {
		for _, g := range c.ranges {
			set(g.lo, g.hi, 1)
		}
		for _, t := range c.tables {
			for _, r := range t.R16 {
				set(rune(r.Lo), rune(r.Hi), rune(r.Stride))
			}
		}
		for _, s := range c.subs {
			sb := s.bits()
			for i := range out {
				out[i] |= sb[i]
			}
		}
	}
	if c.fold {
		base := slices.Clone(out)
		for r := rune(0); r < 0x10000; r++ {
			if base[r>>6]&(1<<(r&63)) == 0 {
				continue
			}
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				if f < 0x10000 {
					out[f>>6] |= 1 << (f & 63)
				}
			}
		}
	}
	if c.neg {
		for i := range out {
			out[i] = ^out[i]
		}
	}
	return out
}

// Matches reports whether r is in the class.
func (c *Class) Matches(r rune) bool {
	if r < utf8.RuneSelf && r >= 0 && c.done {
		return c.ascii[r>>6]&(1<<(r&63)) != 0
	}
	if c.bmp != nil && r < 0x10000 && r >= 0 {
		return c.bmp[r>>6]&(1<<(r&63)) != 0
	}
	return c.slow(r)
}

func (c *Class) slow(r rune) bool {
	in := c.member(r)
	if !in && c.fold {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if c.member(f) {
				in = true
				break
			}
		}
	}
	return in != c.neg
}

// member is membership before negation and folding.
func (c *Class) member(r rune) bool {
	if len(c.inter) > 0 {
		for _, o := range c.inter {
			if !o.Matches(r) {
				return false
			}
		}
		return true
	}
	for _, g := range c.ranges {
		if r >= g.lo && r <= g.hi {
			return true
		}
	}
	for _, t := range c.tables {
		if unicode.Is(t, r) {
			return true
		}
	}
	for _, s := range c.subs {
		if s.Matches(r) {
			return true
		}
	}
	return false
}

// prop is a named set of characters.
type prop struct {
	tables []*unicode.RangeTable
	ranges []rng
}

func tables(ts ...*unicode.RangeTable) prop { return prop{tables: ts} }

// White_Space, which is what Oniguruma's \s and [[:space:]] match.
var whiteSpace = tables(unicode.White_Space)

// alphabetic is the derived property Alphabetic: Lu, Ll, Lt, Lm, Lo, Nl and
// Other_Alphabetic.
var alphabetic = tables(unicode.L, unicode.Nl, unicode.Other_Alphabetic)

// word is Oniguruma's Unicode \w: Letter, Mark, Decimal_Number and
// Connector_Punctuation.
var word = tables(unicode.L, unicode.M, unicode.Nd, unicode.Pc)

var hexDigit = prop{ranges: []rng{{'0', '9'}, {'A', 'F'}, {'a', 'f'}}}

// shorthand returns the class of \s, \d, \w, \h or their negations.
func shorthand(c rune) *Class {
	var p prop
	switch c {
	case 's', 'S':
		p = whiteSpace
	case 'd', 'D':
		p = tables(unicode.Nd)
	case 'w', 'W':
		p = word
	case 'h', 'H':
		p = hexDigit
	}
	cls := &Class{neg: c >= 'A' && c <= 'Z'}
	cls.addProperty(p)
	cls.finish()
	return cls
}

// looseName folds a property name as Oniguruma compares them: case, spaces,
// hyphens and underscores do not matter.
func looseName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case ' ', '-', '_':
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// generalCategories gives the long names of the general categories.
var generalCategories = map[string]string{
	"Letter": "L", "Cased_Letter": "LC", "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll",
	"Titlecase_Letter": "Lt", "Modifier_Letter": "Lm", "Other_Letter": "Lo",
	"Mark": "M", "Combining_Mark": "M", "Nonspacing_Mark": "Mn", "Spacing_Mark": "Mc", "Enclosing_Mark": "Me",
	"Number": "N", "Decimal_Number": "Nd", "Letter_Number": "Nl", "Other_Number": "No",
	"Punctuation": "P", "Connector_Punctuation": "Pc", "Dash_Punctuation": "Pd", "Open_Punctuation": "Ps",
	"Close_Punctuation": "Pe", "Initial_Punctuation": "Pi", "Final_Punctuation": "Pf", "Other_Punctuation": "Po",
	"Symbol": "S", "Math_Symbol": "Sm", "Currency_Symbol": "Sc", "Modifier_Symbol": "Sk", "Other_Symbol": "So",
	"Separator": "Z", "Space_Separator": "Zs", "Line_Separator": "Zl", "Paragraph_Separator": "Zp",
	"Other": "C", "Control": "Cc", "Format": "Cf", "Private_Use": "Co", "Surrogate": "Cs", "Unassigned": "Cn",
}

var propertyIndex map[string]prop

func init() {
	propertyIndex = map[string]prop{}
	add := func(name string, p prop) { propertyIndex[looseName(name)] = p }
	for name, t := range unicode.Categories {
		add(name, tables(t))
	}
	add("LC", tables(unicode.Lu, unicode.Ll, unicode.Lt))
	add("L&", tables(unicode.Lu, unicode.Ll, unicode.Lt))
	for long, short := range generalCategories {
		if p, ok := propertyIndex[looseName(short)]; ok {
			add(long, p)
		}
	}
	for name, t := range unicode.Scripts {
		add(name, tables(t))
	}
	for name, t := range unicode.Properties {
		add(name, tables(t))
	}
	add("Alphabetic", alphabetic)
	add("Alpha", alphabetic)
	add("Lowercase", tables(unicode.Ll, unicode.Other_Lowercase))
	add("Lower", tables(unicode.Ll, unicode.Other_Lowercase))
	add("Uppercase", tables(unicode.Lu, unicode.Other_Uppercase))
	add("Upper", tables(unicode.Lu, unicode.Other_Uppercase))
	add("Space", whiteSpace)
	add("Word", word)
	add("Digit", tables(unicode.Nd))
	add("XDigit", hexDigit)
	add("Alnum", prop{tables: append(slices.Clone(alphabetic.tables), unicode.Nd)})
	add("Punct", tables(unicode.P))
	add("Cntrl", tables(unicode.Cc))
	add("Blank", prop{tables: []*unicode.RangeTable{unicode.Zs}, ranges: []rng{{'\t', '\t'}}})
	add("Graph", prop{tables: []*unicode.RangeTable{unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Co, unicode.Cf}})
	add("Print", prop{tables: []*unicode.RangeTable{unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Zs, unicode.Co, unicode.Cf}})
	add("ASCII", prop{ranges: []rng{{0, 0x7f}}})
	add("Any", prop{ranges: []rng{{0, unicode.MaxRune}}})
}

// property looks a \p{...} name up.
func property(name string) (prop, bool) {
	p, ok := propertyIndex[looseName(name)]
	return p, ok
}

// posixClass looks a [:name:] up; Oniguruma's POSIX brackets are Unicode
// aware, like the properties of the same names.
func posixClass(name string) (prop, bool) {
	switch name {
	case "alnum", "alpha", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space", "upper", "xdigit", "word", "ascii":
		return property(name)
	}
	return prop{}, false
}
