package chattemplate

import (
	"context"
	"fmt"
	"testing"
)

// workCostCases are templates that spend their work in one kind of
// operation each: loops, calls, comparisons, searches, conversions,
// copies. BenchmarkWorkCost reports the time of a unit of work on each,
// which should be about the same (a few nanoseconds), so that the work
// budget bounds the time of any rendering: 10^9 units in a few seconds.
var workCostCases = []string{
	"{% for i in range(100000) %}{% for j in range(100) %}{% endfor %}{% endfor %}",
	"{% set l = range(3000) %}{% for i in l %}{% for j in l %}{{ j }}{% endfor %}{% endfor %}",
	"{% set l = range(3000) %}{% for i in l %}{% for j in l %}{% set x = i + j %}{% endfor %}{% endfor %}",
	"{% set l = range(3000) %}{% for i in l %}{% for j in l %}{% set x = [i, j] %}{% endfor %}{% endfor %}",
	"{% set l = range(3000) %}{% for i in l %}{% for j in l %}{% set x = {'a': i} %}{% endfor %}{% endfor %}",
	"{% set l = range(3000) %}{% macro m(a) %}{{ a }}{% endmacro %}{% for i in l %}{% for j in l %}{{ m(j) }}{% endfor %}{% endfor %}",
	"{% set s = 'x' * 20000000 %}{% for i in range(1000) %}{{ s|length }}{% endfor %}",
	"{% set s = '\u00e9' * 10000000 %}{% for i in range(1000) %}{{ s|length }}{% endfor %}",
	"{% set s = 'x' * 20000000 %}{% for i in range(1000) %}{{ 'y' in s }}{% endfor %}",
	"{% set s = 'x' * 20000000 %}{% for i in range(1000) %}{{ s.count('y') }}{% endfor %}",
	"{% set s = 'x' * 20000000 %}{% for i in range(1000) %}{{ s.find('y') }}{% endfor %}",
	"{% set s = 'x' * 20000000 %}{% set u = 'x' * 20000000 %}{% for i in range(1000) %}{{ s == u }}{% endfor %}",
	"{% set s = '\u00e9' * 10000000 %}{% for i in range(1000) %}{{ s[-1] }}{% endfor %}",
	"{% set s = '\u00e9' * 10000000 %}{% for i in range(1000) %}{{ s[5:7] }}{% endfor %}",
	"{% set s = 'x' * 20000000 %}{% for i in range(1000) %}{{ s.strip('x')|length }}{% endfor %}",
	"{% set s = 'x' * 20000000 %}{% for i in range(1000) %}{{ s.strip('abcdefghijklmnopqrstuvwxyz')|length }}{% endfor %}",
	"{% set s = ' ' * 20000000 %}{% for i in range(1000) %}{{ s.strip()|length }}{% endfor %}",
	"{% set s = '\u00e9' * 10000000 %}{% for i in range(1000) %}{{ s.strip('\u00e9\u00e8')|length }}{% endfor %}",
	"{% set s = 'x' * 20000000 %}{% for i in range(1000) %}{{ s.isalpha() }}{% endfor %}",
	"{% set s = 'x' * 20000000 %}{% for i in range(1000) %}{{ s|wordcount }}{% endfor %}",
	"{% set s = 'x' * 20000000 %}{% for i in range(1000) %}{{ s.startswith('y', 5) }}{% endfor %}",
	"{% set s = 'x' * 20000000 %}{% set d = {} %}{% for i in range(1000) %}{{ d[s] }}{% endfor %}",
	"{% set l = range(100000)|list %}{% for i in range(1000) %}{{ -1 in l }}{% endfor %}",
	"{% set l = range(100000)|list %}{% set m = range(100000)|list %}{% for i in range(1000) %}{{ l == m }}{% endfor %}",
	"{% set l = range(20000)|map('string')|list %}{% set m = range(20000)|map('string')|list %}{% for i in range(1000) %}{{ l == m }}{% endfor %}",
	"{{ range(100000)|unique|length }}",
	"{% set a = [[[0] * 100] * 100] * 100 %}{% set b = [[[0] * 100] * 100] * 100 %}{% for i in range(1000) %}{{ a == b }}{% endfor %}",
	"{% set ns = namespace(l=[]) %}{% for i in range(300) %}{% set ns.l = ns.l + [[[0] * 1000] * 100] %}{% endfor %}{{ ns.l|sort|length }}",
	"{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}",
	"{% set s = 'X' * 1000000 %}{% for i in range(1000) %}{% set t = s.lower() %}{% endfor %}",
	"{% set s = '\u0414' * 500000 %}{% for i in range(1000) %}{% set t = s.lower() %}{% endfor %}",
	"{% set s = '\u0434' * 500000 %}{% for i in range(1000) %}{% set t = s.swapcase() %}{% endfor %}",
	"{% set s = 'aB' * 500000 %}{% for i in range(1000) %}{% set t = s.swapcase() %}{% endfor %}",
	"{% set s = 'ab cd ' * 200000 %}{% for i in range(1000) %}{% set t = s|title %}{% endfor %}",
	"{% set s = 'ab cd ' * 200000 %}{% for i in range(1000) %}{% set t = s.title() %}{% endfor %}",
	"{% set s = 'a\"<b' * 250000 %}{% for i in range(1000) %}{% set t = s|tojson %}{% endfor %}",
	"{% set s = '\u00e9\u4e2d' * 200000 %}{% for i in range(1000) %}{% set t = s|tojson %}{% endfor %}",
	"{% set s = '\u00e9\u4e2d' * 200000 %}{% for i in range(1000) %}{% set t = s|pprint %}{% endfor %}",
	"{% set s = 'a b c ' * 100000 %}{% for i in range(1000) %}{% set t = s.split() %}{% endfor %}",
	"{% set s = 'a,b,c,' * 100000 %}{% for i in range(1000) %}{% set t = s.split(',') %}{% endfor %}",
	"{% set s = 'x' * 1000000 %}{% for i in range(1000) %}{% set t = s ~ 'y' %}{% endfor %}",
	"{% set l = range(1000)|list %}{% for i in range(100000) %}{% set t = l|tojson %}{% endfor %}",
	"{% set l = range(1000)|list %}{% for i in range(100000) %}{% set t = l|string %}{% endfor %}",
	"{% set l = range(1000)|map('string')|list %}{% for i in range(100000) %}{% set t = l|join(',') %}{% endfor %}",
	"{% for i in range(100000) %}{% set t = range(1000) %}{% endfor %}",
	"{% set s = 'x' * 100000 %}{% for i in range(100000) %}{% for c in s %}{% endfor %}{% endfor %}",
	"{% set s = 'x' * 100000 %}{% for i in range(100000) %}{% set c = s|list %}{% endfor %}",
	"{% set d = dict(range(1000)|map('string')|map('list')|list) if false else {} %}{% set ns = namespace(d={}) %}{% for i in range(1000) %}{% set ns.d = dict(ns.d, **{i|string: i}) %}{% endfor %}{% for i in range(10000) %}{% set t = ns.d.copy() %}{% endfor %}",
	"{% set l = range(10000)|reverse|list %}{% for i in range(1000) %}{% set t = l|sort %}{% endfor %}",
	"{% set s = 'ab' * 100000 %}{% for i in range(1000) %}{% set t = s.replace('a', 'xy') %}{% endfor %}",
	"{% set s = 'a\\n' * 100000 %}{% for i in range(1000) %}{% set t = s|indent(4) %}{% endfor %}",
	"{% set s = 'x' * 1000000 %}{% for i in range(1000) %}{% set t = s.center(1100000) %}{% endfor %}",
	"{% for i in range(100000) %}{% set t = '%5d|%-8s|%.3f' % (i, 'ab', 1.5) %}{% endfor %}",
}

// BenchmarkWorkCost renders each of workCostCases until it has spent
// 10^8 units of work (or ends), and reports the nanoseconds per unit.
//
//	go test -run XXX -bench WorkCost -benchtime 3x ./text/chattemplate/
func BenchmarkWorkCost(b *testing.B) {
	const work = 100_000_000
	for i, src := range workCostCases {
		tmpl, err := Parse(src)
		if err != nil {
			b.Fatal(err)
		}
		tmpl.Limits = Limits{Work: work, Alloc: 1 << 40, Output: 1 << 40}
		b.Run(fmt.Sprint(i), func(b *testing.B) {
			units := int64(0)
			for b.Loop() {
				_, bud, err := tmpl.executeBudget(context.Background(), nil)
				if e, ok := err.(*Error); err != nil && (!ok || e.Kind != KindBudget) {
					b.Fatalf("%q: %v", src, err)
				}
				units += bud.work
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(units), "ns/unit")
		})
	}
}
