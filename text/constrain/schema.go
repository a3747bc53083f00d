package constrain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/agentrl/agentrl/text/toolcall"
)

// Limits of Compile, against hostile schemas.
const (
	// MaxSchemaDepth is the deepest nesting of values a schema may
	// describe (properties and items), and MaxNesting the deepest a value
	// of no declared type may nest.
	MaxSchemaDepth = 32
	MaxNesting     = 40
	// MaxSchemaNodes bounds the subschemas of one schema, alternatives
	// included.
	MaxSchemaNodes = 4096
	// MaxLiteralBytes bounds the bytes of a schema's enum and const values
	// and property names, written as JSON.
	MaxLiteralBytes = 256 << 10
	// maxIntDigits and maxFracDigits bound a generated number's digits,
	// maxExpDigits its exponent's.
	maxIntDigits  = 20
	maxFracDigits = 20
	maxExpDigits  = 2
	// maxCost caps the costs the automaton computes, so that sums of
	// absurd minItems and minLength do not overflow: 2^40 where int has
	// 64 bits, 2^24 where it has 32.
	maxCost = 1 << (strconv.IntSize/2 + 8)
)

// ErrUnsatisfiable is wrapped by Compile's error for a schema that no value
// the automaton writes satisfies.
var ErrUnsatisfiable = errors.New("no value satisfies the schema")

// Value is a compiled schema: the JSON values the automaton accepts for it.
type Value struct {
	alts   []*branch
	minLen int // the shortest value's length in bytes
}

// kind is the JSON type of a branch.
type kind uint8

const (
	kObject kind = iota
	kArray
	kString
	kNumber
	kInteger
	kLiteral // enum, const, booleans, null: a set of fixed texts
)

// branch is one alternative of a Value, of a single kind.
type branch struct {
	kind kind
	// kObject: keys are the declared names written as JSON strings
	// (quotes included), sorted; vals their schemas; required the indices
	// of the required ones. free: any key, any value.
	keys     []string
	vals     []*Value
	required []int
	isReq    []bool
	free     bool
	// kArray: items (nil: any value), minItems, maxItems (-1: none).
	items              *Value
	minItems, maxItems int
	// kString: minLen, maxLen (-1: none), in characters.
	minChars, maxChars int
	// kNumber, kInteger: lo, hi (nil: unbounded), and a cache of extend
	// for bounded ones.
	lo, hi *big.Rat
	mu     sync.Mutex
	ext    map[string]int
	// kLiteral.
	lits *litSet
	// minLen is the branch's shortest value in bytes.
	minLen int
}

// litSet is a sorted set of texts.
type litSet struct{ s []string }

// any is the Value of no schema: any JSON value (nesting bounded by
// MaxNesting).
var anyValue = func() *Value {
	v := &Value{minLen: 1}
	obj := &branch{kind: kObject, free: true, minLen: 2}
	arr := &branch{kind: kArray, items: v, maxItems: -1, minLen: 2}
	str := &branch{kind: kString, maxChars: -1, minLen: 2}
	num := &branch{kind: kNumber, minLen: 1}
	lit := &branch{kind: kLiteral, lits: &litSet{s: []string{"false", "null", "true"}}, minLen: 4}
	v.alts = []*branch{obj, arr, str, num, lit}
	return v
}()

// anyObject is the Value of any JSON object.
var anyObject = &Value{alts: []*branch{anyValue.alts[0]}, minLen: 2}

// Any returns the Value of any JSON value.
func Any() *Value { return anyValue }

// AnyObject returns the Value of any JSON object (response_format
// json_object).
func AnyObject() *Value { return anyObject }

// MinLen is the length in bytes of the shortest value v accepts.
func (v *Value) MinLen() int { return v.minLen }

// Objects returns v restricted to its object values, or an error when it
// has none (tool arguments must be an object).
func (v *Value) Objects() (*Value, error) {
	out := &Value{minLen: maxCost}
	for _, b := range v.alts {
		switch {
		case b.kind == kObject:
			out.alts = append(out.alts, b)
		case b.kind == kLiteral:
			var objs []string
			for _, s := range b.lits.s {
				if strings.HasPrefix(s, "{") {
					objs = append(objs, s)
				}
			}
			if len(objs) > 0 {
				out.alts = append(out.alts, &branch{kind: kLiteral, lits: &litSet{s: objs}, minLen: minLens(objs)})
			}
		}
	}
	if len(out.alts) == 0 {
		return nil, fmt.Errorf("the schema allows no object: %w", ErrUnsatisfiable)
	}
	for _, b := range out.alts {
		out.minLen = min(out.minLen, b.minLen)
	}
	return out, nil
}

// CompileOptions vary Compile.
type CompileOptions struct {
	// Forbid, when set, is a text no string of the value may contain (the
	// closing tag of a tool call, which would end the call early for the
	// format's parser). Enum values and property names that contain it
	// are left out.
	Forbid string
}

// Compile reads a JSON schema (a JSON object; see the package doc for the
// keywords it enforces). Errors name the schema path; a schema nothing
// satisfies is one wrapping ErrUnsatisfiable.
func Compile(schema json.RawMessage, opts CompileOptions) (*Value, error) {
	var s map[string]any
	if err := json.Unmarshal(schema, &s); err != nil || s == nil {
		return nil, errors.New("the schema is not a JSON object")
	}
	c := &compiler{opts: opts}
	v, err := c.value(s, "schema", 0)
	if err != nil {
		return nil, err
	}
	if len(v.alts) == 0 {
		return nil, fmt.Errorf("schema: %w", ErrUnsatisfiable)
	}
	return v, nil
}

type compiler struct {
	opts     CompileOptions
	nodes    int
	litBytes int
}

// value compiles schema s at path; depth counts the values around it. An
// unsatisfiable schema is a Value without alternatives, not an error.
func (c *compiler) value(s map[string]any, path string, depth int) (*Value, error) {
	if c.nodes++; c.nodes > MaxSchemaNodes {
		return nil, fmt.Errorf("%s: the schema has more than %d subschemas", path, MaxSchemaNodes)
	}
	if depth > MaxSchemaDepth {
		return nil, fmt.Errorf("%s: the schema nests values more than %d deep", path, MaxSchemaDepth)
	}
	v := &Value{minLen: maxCost}
	// As Check: with anyOf (or else oneOf) a list, only the alternatives
	// count.
	if alts, key, ok := schemaList(s, "anyOf", "oneOf"); ok {
		for i, alt := range alts {
			a, err := c.value(alt, fmt.Sprintf("%s.%s[%d]", path, key, i), depth)
			if err != nil {
				return nil, err
			}
			v.alts = append(v.alts, a.alts...)
		}
	} else {
		bs, err := c.branches(s, path, depth)
		if err != nil {
			return nil, err
		}
		v.alts = bs
	}
	for _, b := range v.alts {
		v.minLen = min(v.minLen, b.minLen)
	}
	return v, nil
}

// branches compiles a schema without anyOf/oneOf.
func (c *compiler) branches(s map[string]any, path string, depth int) ([]*branch, error) {
	cst, hasConst := s["const"]
	enum, hasEnum := s["enum"].([]any)
	if hasConst || hasEnum {
		cands := enum
		if hasConst {
			cands = []any{cst}
		}
		return c.literals(s, cands, path)
	}
	types := []string{"object", "array", "string", "number", "boolean", "null"}
	if t, ok := s["type"]; ok {
		list, isList := t.([]any)
		if !isList {
			list = []any{t}
		}
		types = types[:0:0]
		for _, e := range list {
			if name, ok := e.(string); ok && !slices.Contains(types, name) {
				types = append(types, name)
			}
		}
		if slices.Contains(types, "number") {
			types = slices.DeleteFunc(types, func(t string) bool { return t == "integer" })
		}
	}
	var out []*branch
	for _, t := range types {
		var b *branch
		var err error
		switch t {
		case "object":
			b, err = c.object(s, path, depth)
		case "array":
			b, err = c.array(s, path, depth)
		case "string":
			b = stringBranch(s)
		case "number", "integer":
			b = numberBranch(s, t == "integer")
		case "boolean":
			b = &branch{kind: kLiteral, lits: &litSet{s: []string{"false", "true"}}, minLen: 4}
		case "null":
			b = &branch{kind: kLiteral, lits: &litSet{s: []string{"null"}}, minLen: 4}
		}
		if err != nil {
			return nil, err
		}
		if b != nil {
			out = append(out, b)
		}
	}
	return out, nil
}

// literals is the branch of the candidates (an enum's values, or const)
// that s as a whole accepts, each written as compact JSON.
func (c *compiler) literals(s map[string]any, cands []any, path string) ([]*branch, error) {
	schema, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	tools := []toolcall.Tool{{Name: "v", Parameters: schema}}
	var lits []string
	for _, v := range cands {
		text, err := marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		if c.litBytes += len(text); c.litBytes > MaxLiteralBytes {
			return nil, fmt.Errorf("%s: the schema's enum values and names exceed %d bytes", path, MaxLiteralBytes)
		}
		if c.opts.Forbid != "" && strings.Contains(text, c.opts.Forbid) {
			continue
		}
		if toolcall.Check(tools, toolcall.Call{Name: "v", Arguments: json.RawMessage(text)}) == nil {
			lits = append(lits, text)
		}
	}
	slices.Sort(lits)
	lits = slices.Compact(lits)
	if len(lits) == 0 {
		return nil, nil
	}
	return []*branch{{kind: kLiteral, lits: &litSet{s: lits}, minLen: minLens(lits)}}, nil
}

func (c *compiler) object(s map[string]any, path string, depth int) (*branch, error) {
	props, _ := s["properties"].(map[string]any)
	closed := false
	if ap, ok := s["additionalProperties"].(bool); ok && !ap {
		closed = true
	}
	var required []string
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if name, _ := r.(string); name != "" && !slices.Contains(required, name) {
				required = append(required, name)
			}
		}
	}
	type key struct {
		name string
		val  *Value
	}
	var keys []key
	for _, name := range slices.Sorted(maps.Keys(props)) {
		sub, ok := props[name].(map[string]any)
		if !ok {
			continue // Check treats it as undeclared
		}
		v, err := c.value(sub, path+".properties."+name, depth+1)
		if err != nil {
			return nil, err
		}
		keys = append(keys, key{name, v})
	}
	for _, name := range required {
		if !slices.ContainsFunc(keys, func(k key) bool { return k.name == name }) {
			if closed {
				return nil, nil // required, and not allowed
			}
			keys = append(keys, key{name, anyValue})
		}
	}
	b := &branch{kind: kObject}
	if len(keys) == 0 && !closed {
		b.free, b.minLen = true, 2
		return b, nil
	}
	type enc struct {
		text string
		val  *Value
		req  bool
	}
	var encs []enc
	for _, k := range keys {
		text, err := marshal(k.name)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		if c.litBytes += len(text); c.litBytes > MaxLiteralBytes {
			return nil, fmt.Errorf("%s: the schema's enum values and names exceed %d bytes", path, MaxLiteralBytes)
		}
		req := slices.Contains(required, k.name)
		usable := len(k.val.alts) > 0 && (c.opts.Forbid == "" || !strings.Contains(text, c.opts.Forbid))
		switch {
		case !usable && req:
			return nil, nil
		case usable:
			encs = append(encs, enc{text, k.val, req})
		}
	}
	slices.SortFunc(encs, func(a, b enc) int { return strings.Compare(a.text, b.text) })
	b.minLen = 2
	for i, e := range encs {
		b.keys = append(b.keys, e.text)
		b.vals = append(b.vals, e.val)
		b.isReq = append(b.isReq, e.req)
		if e.req {
			if len(b.required) > 0 {
				b.minLen++ // ','
			}
			b.required = append(b.required, i)
			b.minLen = capCost(b.minLen + len(e.text) + 1 + e.val.minLen)
		}
	}
	return b, nil
}

func (c *compiler) array(s map[string]any, path string, depth int) (*branch, error) {
	b := &branch{kind: kArray, items: anyValue, maxItems: -1}
	if items, ok := s["items"].(map[string]any); ok {
		v, err := c.value(items, path+".items", depth+1)
		if err != nil {
			return nil, err
		}
		b.items = v
	}
	if n, ok := s["minItems"].(float64); ok && n > 0 {
		b.minItems = int(min(math.Ceil(n), maxCost))
	}
	if n, ok := s["maxItems"].(float64); ok {
		if n < 0 {
			return nil, nil
		}
		b.maxItems = int(min(math.Floor(n), maxCost))
	}
	if len(b.items.alts) == 0 {
		b.maxItems = 0
	}
	if b.maxItems >= 0 && b.maxItems < b.minItems {
		return nil, nil
	}
	b.minLen = 2
	if b.minItems > 0 {
		b.minLen = capCost(2 + b.minItems*min(b.items.minLen+1, maxCost/max(b.minItems, 1)) - 1)
	}
	return b, nil
}

func stringBranch(s map[string]any) *branch {
	b := &branch{kind: kString, maxChars: -1}
	if n, ok := s["minLength"].(float64); ok && n > 0 {
		b.minChars = int(min(math.Ceil(n), maxCost))
	}
	if n, ok := s["maxLength"].(float64); ok {
		if n < 0 {
			return nil
		}
		b.maxChars = int(min(math.Floor(n), maxCost))
	}
	if b.maxChars >= 0 && b.maxChars < b.minChars {
		return nil
	}
	b.minLen = capCost(2 + b.minChars)
	return b
}

func numberBranch(s map[string]any, integer bool) *branch {
	b := &branch{kind: kNumber}
	if integer {
		b.kind = kInteger
	}
	if m, ok := s["minimum"].(float64); ok {
		b.lo = shortestRat(m)
	}
	if m, ok := s["maximum"].(float64); ok {
		b.hi = shortestRat(m)
	}
	n := b.extend(numPrefix{})
	if n < 0 {
		return nil
	}
	b.minLen = n
	return b
}

// shortestRat is the shortest decimal that reads back as x: a number
// at or above it (below it) reads as a float64 at or above x (below x),
// as rounding is monotonic, and x's own shortest form, as a client writes
// x, is inside.
func shortestRat(x float64) *big.Rat {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(x, 'g', -1, 64))
	if !ok {
		return new(big.Rat).SetFloat64(x)
	}
	return r
}

// schemaList is toolcall's: the alternatives under the first of keys that
// holds a list, their non-object entries skipped.
func schemaList(s map[string]any, keys ...string) ([]map[string]any, string, bool) {
	for _, k := range keys {
		if list, ok := s[k].([]any); ok {
			var out []map[string]any
			for _, e := range list {
				if m, ok := e.(map[string]any); ok {
					out = append(out, m)
				}
			}
			return out, k, true
		}
	}
	return nil, "", false
}

// marshal writes v as compact JSON without HTML escaping.
func marshal(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func minLens(s []string) int {
	n := maxCost
	for _, x := range s {
		n = min(n, len(x))
	}
	return n
}

func capCost(n int) int {
	if n < 0 || n > maxCost {
		return maxCost
	}
	return n
}
