// Package constrain builds token-level constraints for guided decoding: a
// byte-level automaton over the text a Grammar accepts (JSON values of a
// schema, between literal texts such as a tool call's tags), and a
// per-vocabulary index (Vocab) that turns an automaton state into the set
// of tokens that may come next.
//
// # What a schema constrains
//
// Compile reads the subset of JSON Schema that text/toolcall.Check
// understands, and the automaton accepts only values Check accepts:
//
//   - enforced while decoding: type (one or a list; "integer" as digits
//     without a fraction or exponent), properties, required,
//     additionalProperties false, enum and const (written as compact JSON,
//     object keys sorted, as encoding/json writes them), items,
//     minItems/maxItems, minLength/maxLength (in characters, as Check
//     counts them), minimum/maximum (see Numbers), and anyOf/oneOf (as
//     Check reads oneOf: any one alternative; with either present, the
//     keywords beside it are ignored, as Check ignores them);
//   - ignored by both the automaton and Check: every other keyword
//     (pattern, format, $ref, allOf, not, exclusiveMinimum, multipleOf,
//     uniqueItems, additionalProperties given as a schema, ...). A value
//     under such a keyword is constrained only by the keywords above.
//
// The automaton accepts a subset of what Check accepts, chosen so that a
// small or random model still finishes quickly and the text parses the
// same everywhere:
//
//   - JSON is written compactly: no whitespace but an optional single space
//     after each ':' and ','. Strings are valid UTF-8; \u escapes of
//     surrogates (\uD800–\uDFFF) are not generated.
//   - An object whose schema declares properties (or required names) gets
//     only those keys, each at most once, in any order; an object schema
//     declaring none (and not forbidding additional properties) takes any
//     keys with any values.
//   - Numbers have at most 20 integer and 20 fraction digits and an
//     exponent of at most 2 digits (none for a bounded number), so that
//     every one parses as a finite float64.
//   - Values of no declared type nest at most MaxNesting deep.
//
// A schema no value of that subset satisfies (an empty enum, minLength
// above maxLength, a required property additionalProperties false leaves
// out, no integer between minimum and maximum) is an error of Compile.
//
// # Liveness and budgets
//
// Every prefix the automaton accepts can be completed: each keyword it
// enforces is decided on the prefix (a number's digits so far are checked
// against minimum and maximum by the values still reachable from them, a
// key that no unused property starts with is refused at its first byte).
// Each state also knows the fewest bytes that complete it; a Sequence with
// a token budget allows only tokens after which the rest still fits, so a
// request with max_tokens at least Grammar.MinLen (and a vocabulary that
// has a token for each single byte the completion needs, as byte-level
// vocabularies do) always ends with a complete text, however the model
// samples.
package constrain
