package chattemplate

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// percentSpec is one conversion of a % format after its "%(key)":
// flags, width, ".precision" and the conversion character.
type percentSpec struct {
	flags, width string
	prec         string // "" or ".N"
	conv         byte
}

// pyPercentFormat is Python's "fmt % args" for the common conversions
// (%s %r %d %i %f %e %g %x %o %c %%, flags, width, precision; mapping
// keys with a dict argument), within the budget (what: the operator or
// filter).
func pyPercentFormat(bud *budget, what string, f string, arg any) (any, error) {
	if err := bud.workFor(what, int64(len(f))); err != nil {
		return nil, err
	}
	vals, mapping := percentArgs(arg)
	b := newSbuf(bud, what)
	var spec percentSpec
	var err error
	next := 0
	for i := 0; i < len(f) && !b.done; i++ {
		if f[i] != '%' {
			j := strings.IndexByte(f[i:], '%')
			if j < 0 {
				j = len(f) - i
			}
			b.WriteString(f[i : i+j])
			i += j - 1
			continue
		}
		var val any
		hasKey := false
		i++
		if i < len(f) && f[i] == '(' {
			if val, i, err = percentKey(f, i, mapping); err != nil {
				return nil, err
			}
			hasKey = true
		}
		if spec, i, err = parsePercentSpec(f, i); err != nil {
			return nil, err
		}
		if spec.conv == '%' {
			b.writeByte('%')
			continue
		}
		if !hasKey {
			if next >= len(vals) {
				return nil, fmt.Errorf("not enough arguments for format string")
			}
			val = vals[next]
			next++
		}
		if err := spec.format(b, val); err != nil {
			return nil, err
		}
	}
	if err := bud.failed(); err != nil {
		return nil, err
	}
	if mapping == nil && next < len(vals) {
		return nil, fmt.Errorf("not all arguments converted during string formatting")
	}
	return b.result()
}

// percentArgs are the values a % format takes in turn (a tuple's items,
// or arg itself) and the dict that %(key) conversions read, if arg is one.
func percentArgs(arg any) ([]any, *dictV) {
	switch a := arg.(type) {
	case *listV:
		if a.tuple {
			return a.items, nil
		}
	case *dictV:
		return []any{a}, a
	}
	return []any{arg}, nil
}

// percentKey reads the "(key)" at f[i] and returns the value of key in
// mapping and the index after the ")".
func percentKey(f string, i int, mapping *dictV) (any, int, error) {
	j := strings.IndexByte(f[i:], ')')
	if j < 0 || mapping == nil {
		return nil, 0, fmt.Errorf("format requires a mapping")
	}
	key := f[i+1 : i+j]
	v, ok := mapping.get(key)
	if !ok {
		return nil, 0, fmt.Errorf("KeyError: %s", shortRepr(key))
	}
	return v, i + j + 1, nil
}

// parsePercentSpec parses the conversion that starts at f[i] and returns
// it with the index of its conversion character.
func parsePercentSpec(f string, i int) (percentSpec, int, error) {
	var spec percentSpec
	span := func(ok func(byte) bool) string {
		start := i
		for i < len(f) && ok(f[i]) {
			i++
		}
		return f[start:i]
	}
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	spec.flags = span(func(c byte) bool { return strings.IndexByte("-+ #0", c) >= 0 })
	spec.width = span(isDigit)
	if i < len(f) && f[i] == '.' {
		i++
		spec.prec = "." + span(isDigit)
		if spec.prec == "." {
			spec.prec = ".0"
		}
	}
	if i >= len(f) {
		return spec, 0, fmt.Errorf("incomplete format")
	}
	spec.conv = f[i]
	return spec, i, nil
}

// digitsValue is the value of a width or precision ("", "12", ".3"),
// saturating far beyond any budget.
func digitsValue(d string) int64 {
	n := int64(0)
	for _, c := range strings.TrimPrefix(d, ".") {
		n = min(n*10+int64(c-'0'), 1<<50)
	}
	return n
}

// format writes one conversion of val to w, padded to its width as
// Python pads it: spaces on the left, on the right with "-", or zeros
// after the sign with "0" for numbers. The padding is written a chunk at
// a time, within the budget.
func (s percentSpec) format(w *sbuf, val any) error {
	sign, body, numeric, err := s.convert(w.b, w.what, val)
	if err != nil {
		return err
	}
	pad := digitsValue(s.width) - int64(utf8.RuneCountInString(sign)+utf8.RuneCountInString(body))
	left := strings.Contains(s.flags, "-")
	switch {
	case pad <= 0:
		w.WriteString(sign)
		w.WriteString(body)
	case left:
		w.WriteString(sign)
		w.WriteString(body)
		writeRepeatTo(w, ' ', pad)
	case numeric && strings.Contains(s.flags, "0"):
		w.WriteString(sign)
		writeRepeatTo(w, '0', pad)
		w.WriteString(body)
	default:
		writeRepeatTo(w, ' ', pad)
		w.WriteString(sign)
		w.WriteString(body)
	}
	return nil
}

// writeRepeatTo writes c n times to w, a chunk at a time.
func writeRepeatTo(w *sbuf, c byte, n int64) {
	chunk := strings.Repeat(string(c), int(min(n, 4096)))
	for ; n > 0 && !w.done; n -= int64(len(chunk)) {
		w.WriteString(chunk[:min(n, int64(len(chunk)))])
	}
}

// convert is one conversion of val before padding: its sign (with 0x or
// 0o, for numbers) and body, and whether it is a number.
func (s percentSpec) convert(b *budget, what string, val any) (sign, body string, numeric bool, err error) {
	prec := int64(-1)
	if s.prec != "" {
		prec = digitsValue(s.prec)
		if err := b.fits(what, prec); err != nil {
			return "", "", false, err
		}
	}
	switch s.conv {
	case 's', 'r', 'a':
		if s.conv == 's' {
			body, err = b.str(what, val)
		} else {
			body, err = b.repr(what, val)
		}
		if err == nil && prec >= 0 {
			err = b.workFor(what, int64(len(body)))
			body = body[:runeOffset(body, int(min(prec, int64(len(body)))))]
		}
		return "", body, false, err
	case 'c':
		if x, ok := val.(string); ok {
			return "", x, false, nil
		}
		iv, _, _, _ := number(val)
		return "", string(rune(iv)), false, nil
	case 'd', 'i', 'u', 'x', 'X', 'o':
		return s.convertInt(val, prec)
	case 'f', 'F', 'e', 'E', 'g', 'G':
		return s.convertFloat(val, prec)
	}
	return "", "", false, fmt.Errorf("unsupported format character '%c'", s.conv)
}

// signOf is the sign of a number: "-", or with the flags "+" or " ".
func (s percentSpec) signOf(negative bool) string {
	switch {
	case negative:
		return "-"
	case strings.Contains(s.flags, "+"):
		return "+"
	case strings.Contains(s.flags, " "):
		return " "
	}
	return ""
}

// convertInt is %d, %i, %u, %x, %X or %o.
func (s percentSpec) convertInt(val any, prec int64) (sign, body string, numeric bool, err error) {
	iv, fv, isFloat, ok := number(val)
	base := 10
	switch {
	case s.conv == 'x' || s.conv == 'X' || s.conv == 'o':
		if !ok || isFloat {
			return "", "", false, fmt.Errorf("%%%c format: an integer is required, not %s", s.conv, typeName(val))
		}
		base = 16
		if s.conv == 'o' {
			base = 8
		}
	case !ok:
		return "", "", false, fmt.Errorf("%%%c format: a real number is required, not %s", s.conv, typeName(val))
	case isFloat:
		iv = int64(fv)
	}
	mag := uint64(iv)
	if iv < 0 {
		mag = -mag // the magnitude, MinInt64's included
	}
	body = strconv.FormatUint(mag, base)
	if s.conv == 'X' {
		body = strings.ToUpper(body)
	}
	if n := int64(len(body)); prec > n {
		body = strings.Repeat("0", int(prec-n)) + body
	}
	sign = s.signOf(iv < 0)
	if strings.Contains(s.flags, "#") && base != 10 {
		sign += map[byte]string{'x': "0x", 'X': "0X", 'o': "0o"}[s.conv]
	}
	return sign, body, true, nil
}

// convertFloat is %f, %F, %e, %E, %g or %G.
func (s percentSpec) convertFloat(val any, prec int64) (sign, body string, numeric bool, err error) {
	fv, ok := num(val)
	if !ok {
		return "", "", false, fmt.Errorf("must be real number, not %s", typeName(val))
	}
	if prec < 0 {
		prec = 6
	}
	upper := s.conv == 'F' || s.conv == 'E' || s.conv == 'G'
	sign = s.signOf(math.Signbit(fv) && fv == fv)
	abs := math.Abs(fv)
	switch {
	case math.IsInf(fv, 0) || fv != fv:
		body = "inf"
		if fv != fv {
			body = "nan"
		}
		if upper {
			body = strings.ToUpper(body)
		}
	case strings.Contains(s.flags, "#"):
		// The alternate form (a point always, trailing zeros kept by
		// %g), which fmt writes as C does.
		body = fmt.Sprintf("%#."+strconv.FormatInt(prec, 10)+string(s.conv), abs)
	default:
		conv := s.conv
		if conv == 'F' {
			conv = 'f'
		}
		body = strconv.FormatFloat(abs, conv, int(prec), 64)
	}
	return sign, body, true, nil
}
