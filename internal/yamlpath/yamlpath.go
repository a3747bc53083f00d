// Package yamlpath edits YAML documents by dotted key paths, which is how
// `-set key=value` command-line overrides reach a config before it is
// decoded strictly.
package yamlpath

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Set assigns value (parsed as a YAML scalar, list or mapping) at the dotted
// path in doc, creating intermediate mappings as needed. doc may be a
// document node or a mapping node; an empty document becomes a mapping.
func Set(doc *yaml.Node, path, value string) error {
	if path == "" {
		return fmt.Errorf("empty key in override %q", path+"="+value)
	}
	var parsed yaml.Node
	if err := yaml.Unmarshal([]byte(value), &parsed); err != nil {
		return fmt.Errorf("override %s: value %q is not valid YAML: %w", path, value, err)
	}
	newValue := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: ""}
	if len(parsed.Content) == 1 {
		newValue = parsed.Content[0]
	}
	node := doc
	if node.Kind == yaml.DocumentNode {
		if len(node.Content) == 0 {
			node.Content = []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}
		}
		node = node.Content[0]
	} else if node.Kind == 0 {
		*node = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	keys := strings.Split(path, ".")
	for i, key := range keys {
		if key == "" {
			return fmt.Errorf("override %s: empty key segment", path)
		}
		if node.Kind == yaml.ScalarNode && node.Tag == "!!null" {
			*node = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		}
		if node.Kind != yaml.MappingNode {
			return fmt.Errorf("override %s: %s is not a mapping", path, strings.Join(keys[:i], "."))
		}
		child := lookup(node, key)
		last := i == len(keys)-1
		if child == nil {
			child = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			if last {
				child = newValue
			}
			node.Content = append(node.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, child)
		} else if last {
			*child = *newValue
		}
		node = child
	}
	return nil
}

// Get returns the node at the dotted path, or nil when it is absent.
func Get(doc *yaml.Node, path string) *yaml.Node {
	node := doc
	if node.Kind == yaml.DocumentNode && len(node.Content) == 1 {
		node = node.Content[0]
	}
	for _, key := range strings.Split(path, ".") {
		if node == nil || node.Kind != yaml.MappingNode {
			return nil
		}
		node = lookup(node, key)
	}
	return node
}

// Merge returns a copy of base with every key of overlay set in it:
// mappings merge key by key, recursively; any other value replaces what
// base had. Either may be absent (a zero node) or null; base and overlay
// are not modified.
func Merge(base, overlay *yaml.Node) (*yaml.Node, error) {
	out := deepCopy(unwrap(base))
	ov := unwrap(overlay)
	if isEmpty(ov) {
		return out, nil
	}
	if ov.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: expected a mapping of keys to values", ov.Line)
	}
	if isEmpty(out) {
		out = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	if out.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: expected a mapping of keys to values", out.Line)
	}
	for j := 0; j+1 < len(ov.Content); j += 2 {
		key, val := ov.Content[j], ov.Content[j+1]
		if old := lookup(out, key.Value); old != nil {
			if old.Kind == yaml.MappingNode && val.Kind == yaml.MappingNode {
				merged, err := Merge(old, val)
				if err != nil {
					return nil, err
				}
				*old = *merged
			} else {
				*old = *deepCopy(val)
			}
			continue
		}
		out.Content = append(out.Content, deepCopy(key), deepCopy(val))
	}
	return out, nil
}

func unwrap(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		return n.Content[0]
	}
	return n
}

func isEmpty(n *yaml.Node) bool {
	return n == nil || n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

func deepCopy(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, child := range n.Content {
		c.Content[i] = deepCopy(child)
	}
	return &c
}

func lookup(mapping *yaml.Node, key string) *yaml.Node {
	for j := 0; j+1 < len(mapping.Content); j += 2 {
		if mapping.Content[j].Value == key {
			return mapping.Content[j+1]
		}
	}
	return nil
}

// ParseOverride splits "key=value".
func ParseOverride(s string) (key, value string, err error) {
	key, value, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(key) == "" {
		return "", "", fmt.Errorf("override %q: want key=value", s)
	}
	return strings.TrimSpace(key), value, nil
}

// DecodeStrict decodes node into out, rejecting keys out does not declare.
// Going through a re-encoded document is what lets yaml's KnownFields check
// apply to a node that is part of a larger file.
func DecodeStrict(node *yaml.Node, out any) error {
	if node.Kind == yaml.DocumentNode && len(node.Content) == 1 {
		node = node.Content[0]
	}
	if node.Kind == 0 || (node.Kind == yaml.ScalarNode && node.Tag == "!!null") {
		return nil
	}
	if node.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: expected a mapping of keys to values", node.Line)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(node); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	dec := yaml.NewDecoder(&buf)
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil && !errors.Is(err, io.EOF) {
		return cleanYAMLError(err, node)
	}
	return nil
}

// cleanYAMLError rewrites yaml's "line n: field x not found in type pkg.T"
// into a message that names the key in the user's terms. Line numbers refer
// to the re-encoded document, so they are replaced by the key's line in the
// original node where it can be found.
func cleanYAMLError(err error, node *yaml.Node) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	msgs := slices.Clone(te.Errors)
	for i, m := range msgs {
		if strings.HasPrefix(m, "line ") {
			if _, rest, ok := strings.Cut(m, ": "); ok {
				m = rest
			}
		}
		if after, ok := strings.CutPrefix(m, "field "); ok {
			if key, _, ok := strings.Cut(after, " not found in type"); ok {
				m = fmt.Sprintf("unknown key %q", key)
				if line := keyLine(node, key); line > 0 {
					m = fmt.Sprintf("line %d: %s", line, m)
				}
			}
		}
		msgs[i] = m
	}
	return errors.New(strings.Join(msgs, "; "))
}

// keyLine returns the line of the first mapping key named key in node, or 0.
func keyLine(node *yaml.Node, key string) int {
	if node.Kind == yaml.MappingNode {
		for j := 0; j+1 < len(node.Content); j += 2 {
			if node.Content[j].Value == key {
				return node.Content[j].Line
			}
		}
	}
	for _, c := range node.Content {
		if line := keyLine(c, key); line > 0 {
			return line
		}
	}
	return 0
}

// Flatten writes the leaves of v's YAML form into out as dotted keys
// under prefix ("model.lora.rank": "8"); lists are indexed ("a.0").
func Flatten(prefix string, v any, out map[string]string) error {
	var doc yaml.Node
	if err := doc.Encode(v); err != nil {
		return err
	}
	var tree any
	if err := doc.Decode(&tree); err != nil {
		return err
	}
	flatten(prefix, tree, out)
	return nil
}

// flatten writes the leaves of a decoded YAML tree as dotted keys.
func flatten(prefix string, v any, out map[string]string) {
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			flatten(join(k), e, out)
		}
	case []any:
		for i, e := range x {
			flatten(join(fmt.Sprint(i)), e, out)
		}
	case nil:
		out[prefix] = ""
	default:
		out[prefix] = fmt.Sprint(x)
	}
}
