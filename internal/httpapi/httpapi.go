// Package httpapi holds the plumbing the JSON-over-HTTP servers share:
// writing a JSON reply, reading a bounded request body and decoding it,
// and the random ids and seeds of requests. Each server keeps its own
// error envelope; the errors here carry what it needs to write one.
package httpapi

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// WriteJSON writes v as the body of a response with status, with
// Content-Type application/json. The body is json.Marshal's (compact, HTML
// characters escaped) with no newline after it, as the FastAPI servers
// these APIs come from end theirs. When v does not encode (a
// NaN float, say) WriteJSON writes nothing and returns the error, so that
// the caller can answer in its own error envelope.
func WriteJSON(w http.ResponseWriter, status int, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(data)
	return nil
}

// ReadBody reads the request body, at most limit bytes. A longer body
// fails with a *http.MaxBytesError, and the server closes the connection
// after the reply (see http.MaxBytesReader); a body not read in time (see
// BodyReadTimeout) fails with an error that wraps os.ErrDeadlineExceeded.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
}

// BodyReadTimeout returns h with each request's body to be read within d
// of the handler's start: a client that sends its body slowly, or stops
// halfway, has its read fail after d (and its connection closed) instead
// of holding a connection and a handler without end; ReadBody's error
// then wraps os.ErrDeadlineExceeded. Unlike http.Server's ReadTimeout,
// the deadline is lifted once the body is read, so that a handler may
// take as long as its work needs (a long poll, a stream) without its
// context being cancelled at the deadline. Requests without a body (a
// WebSocket upgrade, a GET) are passed through, as are connections whose
// deadline cannot be set.
func BodyReadTimeout(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(d)); err != nil {
			h.ServeHTTP(w, r)
			return
		}
		r.Body = &deadlineBody{ReadCloser: r.Body, lift: func() { rc.SetReadDeadline(time.Time{}) }}
		h.ServeHTTP(w, r)
	})
}

// deadlineBody lifts its connection's read deadline once the body has
// been read to its end. After any other error (the deadline passed) the
// deadline stays, so that the server's discarding of the rest of the body
// fails at once and the connection is closed.
type deadlineBody struct {
	io.ReadCloser
	lift func()
	once sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(b.lift)
	}
	return n, err
}

// DecodeJSON decodes data, a request body holding one JSON object, into v.
// Fields of v that data leaves out keep their values, and unknown fields
// are ignored. An empty body, a value of the wrong type, malformed JSON
// and data after the object fail with a *DecodeError; an error returned by
// one of v's UnmarshalJSON methods is wrapped in it.
func DecodeJSON(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return &DecodeError{msg: "empty request body: expected a JSON object"}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &DecodeError{Field: te.Field, Err: te}
		}
		return &DecodeError{Err: err, msg: "malformed JSON body: " + err.Error()}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &DecodeError{msg: "malformed JSON body: data after the JSON object"}
	}
	return nil
}

// A DecodeError is a request body that DecodeJSON refused. Its Error is a
// message for the client.
type DecodeError struct {
	// Field is the dotted path of the field whose value has the wrong
	// JSON type (as json.UnmarshalTypeError's Field); empty when the error
	// is not about one field. A caller may rewrite it, to drop the name of
	// an embedded struct, before it calls Error.
	Field string
	// Err is what encoding/json reported: a *json.UnmarshalTypeError for
	// a value of the wrong type, nil for an empty body or trailing data.
	Err error
	msg string // the message of an error other than a type error
}

func (e *DecodeError) Error() string {
	var te *json.UnmarshalTypeError
	switch {
	case !errors.As(e.Err, &te):
		return e.msg
	case e.Field == "":
		return fmt.Sprintf("the request body must be a JSON object, not %s", te.Value)
	default:
		return fmt.Sprintf("field %q: expected %s, got %s", e.Field, te.Type, te.Value)
	}
}

// Unwrap returns Err.
func (e *DecodeError) Unwrap() error { return e.Err }

// NewID returns prefix followed by 16 random hex digits: ids that stay
// unique across restarts of a server, such as saved weights' paths in a
// state directory that outlives it.
func NewID(prefix string) string {
	var b [8]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// RandomSeed returns a random seed, for a request that sets none.
func RandomSeed() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.BigEndian.Uint64(b[:])
}
