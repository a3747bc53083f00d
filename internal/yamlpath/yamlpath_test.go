package yamlpath

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func encode(t *testing.T, n *yaml.Node) string {
	t.Helper()
	out, err := yaml.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func TestSet(t *testing.T) {
	cases := []struct {
		doc, path, value, want string
	}{
		{"a: 1", "a", "2", "a: 2"},
		{"a: 1", "b.c", "x", "a: 1\nb:\n    c: x"},
		{"", "env.name", "sokoban", "env:\n    name: sokoban"},
		{"env:\n  config:\n    dim_x: 6", "env.config.dim_x", "8", "env:\n    config:\n        dim_x: 8"},
		{"a:", "a.b", "[1, 2]", "a:\n    b: [1, 2]"},
	}
	for _, c := range cases {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(c.doc), &doc); err != nil {
			t.Fatal(err)
		}
		if err := Set(&doc, c.path, c.value); err != nil {
			t.Fatalf("Set(%q, %q, %q): %v", c.doc, c.path, c.value, err)
		}
		if got := encode(t, &doc); got != c.want {
			t.Errorf("Set(%q, %q, %q) =\n%s\nwant\n%s", c.doc, c.path, c.value, got, c.want)
		}
	}
}

func TestSetErrors(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("a: 1"), &doc); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"a.b", "", "x..y"} {
		if err := Set(&doc, path, "1"); err == nil {
			t.Errorf("Set(%q) succeeded, want error", path)
		}
	}
	if err := Set(&doc, "b", "[unclosed"); err == nil {
		t.Error("invalid YAML value accepted")
	}
	if _, _, err := ParseOverride("novalue"); err == nil {
		t.Error("ParseOverride accepted a string without '='")
	}
	if k, v, err := ParseOverride(" a.b =c=d"); err != nil || k != "a.b" || v != "c=d" {
		t.Errorf("ParseOverride = %q, %q, %v", k, v, err)
	}
}

func TestGet(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("env:\n  name: sokoban\n"), &doc); err != nil {
		t.Fatal(err)
	}
	if n := Get(&doc, "env.name"); n == nil || n.Value != "sokoban" {
		t.Errorf("Get(env.name) = %v", n)
	}
	if n := Get(&doc, "env.missing"); n != nil {
		t.Errorf("Get(env.missing) = %v, want nil", n)
	}
}

func TestMerge(t *testing.T) {
	var base, overlay yaml.Node
	if err := yaml.Unmarshal([]byte("split: train\nnested:\n  a: 1\n  b: 2\nkeep: x\n"), &base); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte("split: test\nnested:\n  b: 3\n  c: 4\n"), &overlay); err != nil {
		t.Fatal(err)
	}
	got, err := Merge(&base, &overlay)
	if err != nil {
		t.Fatal(err)
	}
	want := "split: test\nnested:\n    a: 1\n    b: 3\n    c: 4\nkeep: x"
	if s := encode(t, got); s != want {
		t.Errorf("merged:\n%s\nwant:\n%s", s, want)
	}
	if s := encode(t, &base); !strings.Contains(s, "split: train") || strings.Contains(s, "c: 4") {
		t.Errorf("Merge changed its base:\n%s", s)
	}
	if got, err := Merge(&yaml.Node{}, &overlay); err != nil || !strings.Contains(encode(t, got), "split: test") {
		t.Errorf("onto an absent base: %v", err)
	}
	var scalar yaml.Node
	yaml.Unmarshal([]byte("7"), &scalar)
	if _, err := Merge(&base, &scalar); err == nil {
		t.Error("a scalar overlay was accepted")
	}
}
