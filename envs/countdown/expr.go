package countdown

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// maxExprLen bounds the answer text the parser looks at; a longer answer is
// malformed. It keeps hostile inputs (deeply nested parentheses, megabytes
// of digits) cheap to reject.
const maxExprLen = 256

// maxLiteral bounds integer literals; Countdown numbers are small.
const maxLiteral = 1_000_000

// expr is a parsed arithmetic expression over integer literals.
type expr struct {
	op          byte // 0 for a literal, else one of + - * /
	value       int64
	left, right *expr
}

// errMalformed wraps every parse failure.
var errMalformed = errors.New("malformed equation")

// parseEquation parses an answer such as "(44 + 19) - 35" or "44+19-35 = 28".
// A trailing "= N" is accepted and ignored, since models often restate the
// target; the left side alone is evaluated. It returns the expression and
// the integer literals it uses, in order of appearance.
func parseEquation(s string) (*expr, []int64, error) {
	if len(s) > maxExprLen {
		return nil, nil, fmt.Errorf("%w: longer than %d characters", errMalformed, maxExprLen)
	}
	if lhs, rhs, ok := strings.Cut(s, "="); ok {
		if strings.Contains(rhs, "=") || !isInteger(strings.TrimSpace(rhs)) {
			return nil, nil, fmt.Errorf("%w: only \"= number\" may follow the expression", errMalformed)
		}
		s = lhs
	}
	p := &parser{src: s}
	e, err := p.parseSum()
	if err != nil {
		return nil, nil, err
	}
	p.skipSpace()
	if p.pos != len(p.src) {
		return nil, nil, fmt.Errorf("%w: unexpected %q at position %d", errMalformed, p.src[p.pos], p.pos)
	}
	return e, p.literals, nil
}

func isInteger(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parser is a recursive-descent parser for
//
//	sum     = product { ("+" | "-") product }
//	product = factor { ("*" | "/") factor }
//	factor  = integer | "(" sum ")"
//
// Unary minus is not part of Countdown and is rejected. The nesting depth is
// bounded by maxExprLen.
type parser struct {
	src      string
	pos      int
	literals []int64
}

func (p *parser) skipSpace() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

func (p *parser) peekOp(ops string) (byte, bool) {
	p.skipSpace()
	if p.pos < len(p.src) && strings.IndexByte(ops, p.src[p.pos]) >= 0 {
		return p.src[p.pos], true
	}
	return 0, false
}

func (p *parser) parseSum() (*expr, error) {
	left, err := p.parseProduct()
	if err != nil {
		return nil, err
	}
	for {
		op, ok := p.peekOp("+-")
		if !ok {
			return left, nil
		}
		p.pos++
		right, err := p.parseProduct()
		if err != nil {
			return nil, err
		}
		left = &expr{op: op, left: left, right: right}
	}
}

func (p *parser) parseProduct() (*expr, error) {
	left, err := p.parseFactor()
	if err != nil {
		return nil, err
	}
	for {
		op, ok := p.peekOp("*/")
		if !ok {
			return left, nil
		}
		p.pos++
		right, err := p.parseFactor()
		if err != nil {
			return nil, err
		}
		left = &expr{op: op, left: left, right: right}
	}
}

func (p *parser) parseFactor() (*expr, error) {
	p.skipSpace()
	if p.pos >= len(p.src) {
		return nil, fmt.Errorf("%w: expression ends early", errMalformed)
	}
	c := p.src[p.pos]
	switch {
	case c == '(':
		p.pos++
		e, err := p.parseSum()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != ')' {
			return nil, fmt.Errorf("%w: missing ')'", errMalformed)
		}
		p.pos++
		return e, nil
	case c >= '0' && c <= '9':
		start := p.pos
		var v int64
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			v = v*10 + int64(p.src[p.pos]-'0')
			if v > maxLiteral {
				return nil, fmt.Errorf("%w: number %s... too large", errMalformed, p.src[start:p.pos+1])
			}
			p.pos++
		}
		p.literals = append(p.literals, v)
		return &expr{value: v}, nil
	default:
		return nil, fmt.Errorf("%w: unexpected %q at position %d", errMalformed, c, p.pos)
	}
}

// errDivByZero reports an expression that divides by zero.
var errDivByZero = errors.New("division by zero")

// eval computes the exact rational value of e, so "6 / 4 * 2" is 3 as in
// real arithmetic (the reference evaluates in floating point and compares
// with a 1e-5 tolerance, which agrees on these small integers).
func (e *expr) eval() (*big.Rat, error) {
	if e.op == 0 {
		return new(big.Rat).SetInt64(e.value), nil
	}
	l, err := e.left.eval()
	if err != nil {
		return nil, err
	}
	r, err := e.right.eval()
	if err != nil {
		return nil, err
	}
	switch e.op {
	case '+':
		return l.Add(l, r), nil
	case '-':
		return l.Sub(l, r), nil
	case '*':
		return l.Mul(l, r), nil
	default:
		if r.Sign() == 0 {
			return nil, errDivByZero
		}
		return l.Quo(l, r), nil
	}
}
