package openenv

import (
	"reflect"
	"strings"
)

// schemaOf is the JSON Schema of T's JSON form, in the shape pydantic's
// model_json_schema writes (title, type, properties with titles and
// descriptions, required, additionalProperties false for models that
// reject unknown fields). Embedded structs contribute their fields;
// pointers and slices are nullable, as their JSON is.
func schemaOf[T any](title, description string, allowExtra bool) map[string]any {
	props := map[string]any{}
	var required []string
	collectFields(reflect.TypeFor[T](), props, &required)
	s := map[string]any{"title": title, "description": description, "type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	if !allowExtra {
		s["additionalProperties"] = false
	}
	return s
}

func collectFields(t reflect.Type, props map[string]any, required *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			collectFields(f.Type, props, required)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := typeSchema(f.Type)
		p["title"] = titleOf(name)
		if d := f.Tag.Get("doc"); d != "" {
			p["description"] = d
		}
		props[name] = p
		if f.Tag.Get("required") == "true" {
			*required = append(*required, name)
		}
	}
}

// typeSchema is the schema of one Go type's JSON form.
func typeSchema(t reflect.Type) map[string]any {
	switch t.Kind() {
	case reflect.Pointer:
		return map[string]any{"anyOf": []any{typeSchema(t.Elem()), map[string]any{"type": "null"}}}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		return map[string]any{"anyOf": []any{map[string]any{"type": "array", "items": typeSchema(t.Elem())}, map[string]any{"type": "null"}}}
	case reflect.Map:
		if t.Elem().Kind() == reflect.Interface {
			return map[string]any{"type": "object", "additionalProperties": true}
		}
		return map[string]any{"type": "object", "additionalProperties": typeSchema(t.Elem())}
	}
	return map[string]any{}
}

// titleOf is pydantic's field title: "action_valid" → "Action Valid".
func titleOf(name string) string {
	words := strings.Split(name, "_")
	for i, w := range words {
		if w != "" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ")
}
