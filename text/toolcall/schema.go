package toolcall

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Tool is a function a model may call, as the OpenAI API and chat
// templates describe it.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON schema of the arguments object.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// APITool is a tool in the OpenAI API's shape, {"type": "function",
// "function": {"name", "description", "parameters"}}, which is also what
// transformers passes chat templates (key order included).
type APITool struct {
	Type     string `json:"type"`
	Function Tool   `json:"function"`
}

// APITools wraps tools in the API's shape.
func APITools(tools []Tool) []APITool {
	if tools == nil {
		return nil
	}
	out := make([]APITool, len(tools))
	for i, t := range tools {
		out[i] = APITool{Type: "function", Function: t}
	}
	return out
}

// Check reports why a call does not fit its tool: an unknown name, or
// arguments its schema refuses. It understands the subset of JSON Schema
// function definitions use: type (one or a list), properties, required,
// additionalProperties false, enum, const, items, minimum/maximum,
// minLength/maxLength, minItems/maxItems, and anyOf/oneOf of those.
func Check(tools []Tool, c Call) error {
	i := slices.IndexFunc(tools, func(t Tool) bool { return t.Name == c.Name })
	if i < 0 {
		return fmt.Errorf("toolcall: no tool is named %q", c.Name)
	}
	var args any
	if err := json.Unmarshal(orEmpty(c.Arguments), &args); err != nil {
		return fmt.Errorf("toolcall: %s: arguments: %w", c.Name, err)
	}
	if len(tools[i].Parameters) == 0 {
		return nil
	}
	var schema map[string]any
	if err := json.Unmarshal(tools[i].Parameters, &schema); err != nil {
		return fmt.Errorf("toolcall: %s: the tool's schema: %w", c.Name, err)
	}
	if err := validate(schema, args, "arguments"); err != nil {
		return fmt.Errorf("toolcall: %s: %w", c.Name, err)
	}
	return nil
}

// validate checks v against schema; path names v in errors.
func validate(schema map[string]any, v any, path string) error {
	if alts, ok := schemaList(schema, "anyOf", "oneOf"); ok {
		var errs []string
		for _, alt := range alts {
			if err := validate(alt, v, path); err == nil {
				return nil
			} else {
				errs = append(errs, err.Error())
			}
		}
		return fmt.Errorf("%s matches none of its alternatives (%s)", path, strings.Join(errs, "; "))
	}
	if c, ok := schema["const"]; ok && !equalJSON(c, v) {
		return fmt.Errorf("%s must be %v", path, c)
	}
	if enum, ok := schema["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return equalJSON(e, v) }) {
		return fmt.Errorf("%s must be one of %v, got %v", path, enum, v)
	}
	if t, ok := schema["type"]; ok {
		types := []any{t}
		if list, ok := t.([]any); ok {
			types = list
		}
		if !slices.ContainsFunc(types, func(t any) bool { s, _ := t.(string); return hasType(v, s) }) {
			return fmt.Errorf("%s must be of type %v, got %s", path, t, typeOf(v))
		}
	}
	switch x := v.(type) {
	case map[string]any:
		return validateObject(schema, x, path)
	case []any:
		if n, ok := schema["minItems"].(float64); ok && float64(len(x)) < n {
			return fmt.Errorf("%s must have at least %v items", path, n)
		}
		if n, ok := schema["maxItems"].(float64); ok && float64(len(x)) > n {
			return fmt.Errorf("%s must have at most %v items", path, n)
		}
		if items, ok := schema["items"].(map[string]any); ok {
			for i, e := range x {
				if err := validate(items, e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	case string:
		n := float64(len([]rune(x)))
		if m, ok := schema["minLength"].(float64); ok && n < m {
			return fmt.Errorf("%s must be at least %v characters", path, m)
		}
		if m, ok := schema["maxLength"].(float64); ok && n > m {
			return fmt.Errorf("%s must be at most %v characters", path, m)
		}
	case float64:
		if m, ok := schema["minimum"].(float64); ok && x < m {
			return fmt.Errorf("%s must be at least %v", path, m)
		}
		if m, ok := schema["maximum"].(float64); ok && x > m {
			return fmt.Errorf("%s must be at most %v", path, m)
		}
	}
	return nil
}

func validateObject(schema map[string]any, x map[string]any, path string) error {
	props, _ := schema["properties"].(map[string]any)
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if name, _ := r.(string); name != "" {
				if _, ok := x[name]; !ok {
					return fmt.Errorf("%s lacks the required %q", path, name)
				}
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(x)) {
		sub, known := props[k].(map[string]any)
		if !known {
			if ap, ok := schema["additionalProperties"].(bool); ok && !ap {
				return fmt.Errorf("%s has %q, which its schema does not allow", path, k)
			}
			continue
		}
		if err := validate(sub, x[k], path+"."+k); err != nil {
			return err
		}
	}
	return nil
}

func schemaList(schema map[string]any, keys ...string) ([]map[string]any, bool) {
	for _, k := range keys {
		if list, ok := schema[k].([]any); ok {
			var out []map[string]any
			for _, e := range list {
				if m, ok := e.(map[string]any); ok {
					out = append(out, m)
				}
			}
			return out, true
		}
	}
	return nil, false
}

func hasType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	}
	return false
}

func typeOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
