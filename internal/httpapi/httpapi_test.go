package httpapi

import (
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func TestWriteJSON(t *testing.T) {
	rec := httptest.NewRecorder()
	if err := WriteJSON(rec, http.StatusTeapot, map[string]any{"a": "<b>", "n": 1}); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusTeapot || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("status %d, Content-Type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	if got, want := rec.Body.String(), `{"a":"\u003cb\u003e","n":1}`; got != want {
		t.Errorf("body %q, want %q", got, want)
	}

	rec = httptest.NewRecorder()
	if err := WriteJSON(rec, http.StatusOK, math.NaN()); err == nil {
		t.Error("NaN encoded")
	}
	if rec.Body.Len() != 0 || rec.Header().Get("Content-Type") != "" {
		t.Errorf("a failed write wrote %q (%v)", rec.Body, rec.Header())
	}
}

func TestReadBody(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("12345"))
	if data, err := ReadBody(httptest.NewRecorder(), r, 5); err != nil || string(data) != "12345" {
		t.Errorf("within the limit: %q, %v", data, err)
	}
	r = httptest.NewRequest(http.MethodPost, "/", strings.NewReader("123456"))
	var mb *http.MaxBytesError
	if _, err := ReadBody(httptest.NewRecorder(), r, 5); !errors.As(err, &mb) || mb.Limit != 5 {
		t.Errorf("over the limit: %v", err)
	}
}

// strict fails to unmarshal anything but "ok".
type strict string

var errStrict = errors.New("not ok")

func (s *strict) UnmarshalJSON(b []byte) error {
	if string(b) != `"ok"` {
		return errStrict
	}
	*s = "ok"
	return nil
}

func TestDecodeJSON(t *testing.T) {
	type inner struct {
		N int `json:"n"`
	}
	type body struct {
		inner
		S   string `json:"s"`
		Def int    `json:"def"`
		X   strict `json:"x"`
	}
	v := body{Def: 7}
	if err := DecodeJSON([]byte(`{"n": 1, "s": "a", "extra": true}`), &v); err != nil || v.N != 1 || v.S != "a" || v.Def != 7 {
		t.Errorf("decoded %+v, %v", v, err)
	}
	for _, c := range []struct {
		body, field, msg string
	}{
		{" \n", "", "empty request body: expected a JSON object"},
		{`[1]`, "", "the request body must be a JSON object, not array"},
		{`{"s": 3}`, "s", `field "s": expected string, got number`},
		{`{"n": "x"}`, "inner.n", `field "inner.n": expected int, got string`},
		{`{"s": `, "", "malformed JSON body: unexpected EOF"},
		{`{} {}`, "", "malformed JSON body: data after the JSON object"},
		{`{"x": "no"}`, "", "malformed JSON body: not ok"},
	} {
		var v body
		err := DecodeJSON([]byte(c.body), &v)
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("%q: %v is not a *DecodeError", c.body, err)
		} else if de.Field != c.field || err.Error() != c.msg {
			t.Errorf("%q: %v (field %q), want %q (field %q)", c.body, err, de.Field, c.msg, c.field)
		}
	}
	err := DecodeJSON([]byte(`{"x": "no"}`), &v)
	if !errors.Is(err, errStrict) {
		t.Errorf("an UnmarshalJSON error is not wrapped: %v", err)
	}
	// A caller may rename the field before it writes the message.
	var de *DecodeError
	errors.As(DecodeJSON([]byte(`{"n": "x"}`), &v), &de)
	de.Field = "n"
	if got := de.Error(); got != `field "n": expected int, got string` {
		t.Errorf("renamed: %q", got)
	}
}

func TestNewID(t *testing.T) {
	a, b := NewID("req_"), NewID("req_")
	if !regexp.MustCompile(`^req_[0-9a-f]{16}$`).MatchString(a) || a == b {
		t.Errorf("ids %q, %q", a, b)
	}
	if x, y := RandomSeed(), RandomSeed(); x == y {
		t.Errorf("two equal random seeds %d", x)
	}
}
