package chattemplate

import (
	"fmt"
	"strings"
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
// keys with a dict argument).
func pyPercentFormat(f string, arg any) (any, error) {
	vals, mapping := percentArgs(arg)
	var b strings.Builder
	var spec percentSpec
	var err error
	next := 0
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			b.WriteByte(f[i])
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
			b.WriteByte('%')
			continue
		}
		if !hasKey {
			if next >= len(vals) {
				return nil, fmt.Errorf("not enough arguments for format string")
			}
			val = vals[next]
			next++
		}
		out, err := spec.format(val)
		if err != nil {
			return nil, err
		}
		b.WriteString(out)
	}
	if mapping == nil && next < len(vals) {
		return nil, fmt.Errorf("not all arguments converted during string formatting")
	}
	return b.String(), nil
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
		return nil, 0, fmt.Errorf("KeyError: %s", pyRepr(key))
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

// format converts one value.
func (s percentSpec) format(val any) (string, error) {
	verb := "%" + s.flags + s.width + s.prec
	switch s.conv {
	case 's':
		return fmt.Sprintf(strings.ReplaceAll(verb, "#", "")+"s", pyStr(val)), nil
	case 'r', 'a':
		return fmt.Sprintf(strings.ReplaceAll(verb, "#", "")+"s", pyRepr(val)), nil
	case 'd', 'i', 'u':
		iv, fv, isFloat, ok := number(val)
		if !ok {
			return "", fmt.Errorf("%%%c format: a real number is required, not %s", s.conv, typeName(val))
		}
		if isFloat {
			iv = int64(fv)
		}
		return fmt.Sprintf(verb+"d", iv), nil
	case 'x', 'X', 'o':
		iv, _, isFloat, ok := number(val)
		if !ok || isFloat {
			return "", fmt.Errorf("%%%c format: an integer is required, not %s", s.conv, typeName(val))
		}
		return fmt.Sprintf(verb+string(s.conv), iv), nil
	case 'f', 'F', 'e', 'E', 'g', 'G':
		fv, ok := num(val)
		if !ok {
			return "", fmt.Errorf("must be real number, not %s", typeName(val))
		}
		if s.prec == "" {
			verb += ".6"
		}
		return fmt.Sprintf(verb+string(s.conv), fv), nil
	case 'c':
		if x, ok := val.(string); ok {
			return x, nil
		}
		iv, _, _, _ := number(val)
		return string(rune(iv)), nil
	}
	return "", fmt.Errorf("unsupported format character '%c'", s.conv)
}
