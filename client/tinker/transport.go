package tinker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrClosed is returned by calls made after Close.
	ErrClosed = errors.New("tinker: client is closed")
	// ErrMalformed is wrapped by the errors for replies that arrived whole
	// but do not have the expected shape: invalid JSON, a missing field,
	// lengths that disagree with the request.
	ErrMalformed = errors.New("tinker: malformed response")
	// ErrUnknownRequest is wrapped by the error of a future whose request
	// the server does not know (retrieve_future answered 404), as after a
	// restart of a server that keeps its futures in memory, or whose
	// result it no longer has (410).
	ErrUnknownRequest = errors.New("tinker: the server does not know the request")
	// ErrFutureTimeout is wrapped by the error of a future that did not
	// resolve within Options.FutureTimeout.
	ErrFutureTimeout = errors.New("tinker: future did not resolve in time")
	// ErrSeqConflict is wrapped by the error of a training call that the
	// server refused with 409 Conflict: its seq_id was already used for a
	// different request (or, on save_weights, the checkpoint name exists).
	ErrSeqConflict = errors.New("tinker: sequence number or name already used")
)

// APIError is a failure the server reported: an HTTP error status, or a
// future that resolved to a RequestFailedResponse.
type APIError struct {
	// Route is the route's name under /api/v1, e.g. "optim_step".
	Route string
	// RequestID is the future's request id, when the failure concerns one.
	RequestID string
	// Status is the HTTP status; 0 for a failed future's result.
	Status int
	// Category is a failed future's category (CategoryUser, CategoryServer,
	// CategoryUnknown). HTTP errors get CategoryUser for 4xx and
	// CategoryServer for 5xx.
	Category string
	// Message is the server's message: the detail of a {"detail": …} body,
	// the error of a RequestFailedResponse, or the start of the body.
	Message string
	// Retryable says whether the same call may succeed later (408, 429,
	// 5xx, a failure not in the user category). The client has already
	// retried what its rules allow (see the package doc).
	Retryable bool

	// kind is a sentinel the error unwraps to, or nil.
	kind error
	// attempts is how many attempts the call made, the last one answered
	// with this error (0 when unknown).
	attempts int
}

// Error implements error.
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("tinker: ")
	b.WriteString(e.Route)
	if e.RequestID != "" {
		fmt.Fprintf(&b, " (request %s)", e.RequestID)
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	} else {
		fmt.Fprintf(&b, ": request failed (%s error)", e.Category)
	}
	msg := e.Message
	if msg == "" && e.Status != 0 {
		msg = http.StatusText(e.Status)
	}
	if msg != "" {
		b.WriteString(": ")
		b.WriteString(msg)
	}
	switch e.kind {
	case ErrUnknownRequest:
		b.WriteString(" (the server no longer knows this request: was it restarted?)")
	case ErrSeqConflict:
		b.WriteString(" (the seq_id or name was already used for a different request; not retried)")
	}
	return b.String()
}

// Unwrap returns the sentinel the error stands for, if any
// (ErrUnknownRequest, ErrSeqConflict).
func (e *APIError) Unwrap() error { return e.kind }

// temporaryStatus reports whether a retry may cure an HTTP status: 408,
// 429 and 5xx other than 501 and 505.
func temporaryStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests ||
		code >= 500 && code != http.StatusNotImplemented && code != http.StatusHTTPVersionNotSupported
}

func categoryOf(status int) string {
	if status >= 500 {
		return CategoryServer
	}
	return CategoryUser
}

// transient is an attempt's failure that another attempt may cure.
type transient struct {
	err error
	// after is the server's Retry-After, 0 when absent.
	after time.Duration
	// timedOut marks the attempt's own deadline passing.
	timedOut bool
}

func (t *transient) Error() string { return t.err.Error() }
func (t *transient) Unwrap() error { return t.err }

// maxRetryAfter caps a server's Retry-After, as the SDK does (it honours
// at most 60 s).
const maxRetryAfter = 60 * time.Second

// maxErrorBody caps how much of an error reply is read.
const maxErrorBody = 64 << 10

// maxResponse caps a reply: sample results with prompt log-probs of long
// prompts run to megabytes, nothing legitimate to this.
const maxResponse = 512 << 20

// call is one HTTP request: its route under /api/v1 and body, with the
// body's media type (JSON when empty) and encoding, the reply's media
// types it accepts (JSON when empty), and the credential to send instead
// of the client's (for the token exchange).
type call struct {
	method, route string
	body          []byte
	contentType   string
	encoding      string
	accept        string
	key           *string
}

// reply is a 2xx reply: its body and media type.
type reply struct {
	data        []byte
	contentType string
}

// isProto reports whether the reply is a protobuf message.
func (r reply) isProto() bool { return mediaType(r.contentType) == ContentTypeProto }

// mediaType returns a Content-Type's media type, lower-cased, without
// parameters.
func mediaType(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// exchange is one HTTP round trip bounded by timeout. It returns the body
// of a 2xx reply; an *APIError for another status (wrapped in *transient
// when temporaryStatus); a *transient for network errors and the
// attempt's timeout; ctx's error, wrapped, when ctx ends.
func (c *Client) exchange(ctx context.Context, cl call, idemKey string, timeout time.Duration) (reply, error) {
	method, route := cl.method, cl.route
	url := c.base + APIPrefix + "/" + route
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer context.AfterFunc(c.closing, cancel)()
	var rd io.Reader
	if cl.body != nil {
		rd = bytes.NewReader(cl.body)
	}
	req, err := http.NewRequestWithContext(actx, method, url, rd)
	if err != nil {
		return reply{}, fmt.Errorf("tinker: %w", err)
	}
	if cl.body != nil {
		ct := cl.contentType
		if ct == "" {
			ct = ContentTypeJSON
		}
		req.Header.Set("Content-Type", ct)
		if cl.encoding != "" {
			req.Header.Set("Content-Encoding", cl.encoding)
		}
	}
	accept := cl.accept
	if accept == "" {
		accept = ContentTypeJSON
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", userAgent)
	key := ""
	if cl.key != nil {
		key = *cl.key
	} else if key, err = c.auth.header(ctx); err != nil {
		return reply{}, err
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	if idemKey != "" {
		req.Header.Set("X-Idempotency-Key", idemKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return reply{}, c.transportError(ctx, actx, method, route, timeout, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		aerr := &APIError{
			Route:     route,
			Status:    resp.StatusCode,
			Category:  categoryOf(resp.StatusCode),
			Message:   errorMessage(data),
			Retryable: temporaryStatus(resp.StatusCode),
		}
		if aerr.Retryable {
			return reply{}, &transient{err: aerr, after: retryAfter(resp.Header)}
		}
		return reply{}, aerr
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return reply{}, c.transportError(ctx, actx, method, route, timeout, fmt.Errorf("reading response: %w", err))
	}
	if len(data) > maxResponse {
		return reply{}, fmt.Errorf("tinker: %s %s: response larger than %d bytes", method, route, maxResponse)
	}
	return reply{data: data, contentType: resp.Header.Get("Content-Type")}, nil
}

// transportError classifies a failed exchange: the caller's context ending
// is final; the attempt's own timeout and network errors are transient.
func (c *Client) transportError(ctx, actx context.Context, method, route string, timeout time.Duration, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("tinker: %s %s: %w", method, route, context.Cause(ctx))
	}
	if c.closed.Load() {
		return fmt.Errorf("%w (%s %s aborted)", ErrClosed, method, route)
	}
	if actx.Err() != nil {
		return &transient{err: fmt.Errorf("tinker: %s %s: attempt timed out after %v", method, route, timeout), timedOut: true}
	}
	return &transient{err: fmt.Errorf("tinker: %s %s: %w", method, route, err)}
}

// do sends body to route, retrying transient failures up to MaxRetries
// times with backoff, and returns the 2xx reply's body. Every attempt
// sends the same bytes (and the same idempotency key), which is what makes
// retrying a training write safe (see the package doc).
func (c *Client) do(ctx context.Context, method, route string, body []byte) ([]byte, error) {
	r, err := c.doCall(ctx, call{method: method, route: route, body: body})
	return r.data, err
}

// doCall is do for any call. An *APIError it returns records the
// attempts made (a 409 on a later attempt may answer the first one).
func (c *Client) doCall(ctx context.Context, cl call) (reply, error) {
	if c.closed.Load() {
		return reply{}, ErrClosed
	}
	var key string
	if cl.method == http.MethodPost {
		key = newIdempotencyKey()
	}
	for retry := 0; ; retry++ {
		r, err := c.exchange(ctx, cl, key, c.opts.RequestTimeout)
		if err == nil {
			return r, nil
		}
		var tr *transient
		if !errors.As(err, &tr) {
			var aerr *APIError
			if errors.As(err, &aerr) {
				aerr.attempts = retry + 1
			}
			return reply{}, classifyConflict(err)
		}
		if err := c.backoff(ctx, cl.route, retry, tr); err != nil {
			return reply{}, err
		}
	}
}

// classifyConflict marks a 409 as ErrSeqConflict.
func classifyConflict(err error) error {
	var aerr *APIError
	if errors.As(err, &aerr) && aerr.Status == http.StatusConflict {
		aerr.kind = ErrSeqConflict
	}
	return err
}

// backoff waits before retry number retry+1 of route after tr, or returns
// the error to report when retries are exhausted, ctx ends first, or ctx's
// deadline leaves no time for the wait.
func (c *Client) backoff(ctx context.Context, route string, retry int, tr *transient) error {
	if retry >= c.opts.MaxRetries {
		if retry > 0 {
			return fmt.Errorf("%w (gave up after %d attempts)", tr.err, retry+1)
		}
		return tr.err
	}
	delay := c.delay(retry)
	if tr.after > 0 {
		delay = max(delay, min(tr.after, maxRetryAfter))
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < delay {
		return fmt.Errorf("%w (no time left to retry: attempt %d, next in %v)", tr.err, retry+1, delay.Round(time.Millisecond))
	}
	c.log.Warn("tinker: retrying", "route", route, "attempt", retry+1, "max_retries", c.opts.MaxRetries, "delay", delay, "err", tr.err)
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("tinker: %s: %w (while waiting to retry: %v)", route, context.Cause(ctx), tr.err)
	case <-c.closing.Done():
		return ErrClosed
	}
}

// delay is the backoff before retry number retry+1: RetryBaseDelay
// doubled per retry up to RetryMaxDelay, less up to a quarter of jitter
// (the SDK's shape) drawn from the client's seeded source.
func (c *Client) delay(retry int) time.Duration {
	d := c.opts.RetryBaseDelay
	for i := 0; i < retry && d < c.opts.RetryMaxDelay; i++ {
		d *= 2
	}
	d = min(d, c.opts.RetryMaxDelay)
	c.rngMu.Lock()
	f := c.rng.Float64()
	c.rngMu.Unlock()
	return d - time.Duration(float64(d)*0.25*f)
}

// retryAfter reads a reply's wait hint: retry-after-ms (the SDK's
// non-standard header), else Retry-After in seconds or as an HTTP date.
func retryAfter(h http.Header) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return min(time.Duration(ms*float64(time.Millisecond)), maxRetryAfter)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return min(time.Duration(s*float64(time.Second)), maxRetryAfter)
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(time.Until(t), 0), maxRetryAfter)
	}
	return 0
}

// errorMessage extracts the message of an error body: FastAPI's detail (a
// string, or a list of validation errors), else the start of the body.
func errorMessage(data []byte) string {
	var eb ErrorBody
	if json.Unmarshal(data, &eb) == nil && eb.Detail != nil {
		if s := detailMessage(eb.Detail); s != "" {
			return s
		}
	}
	s := strings.TrimSpace(string(data))
	if len(s) > 512 {
		s = s[:512] + "…"
	}
	return s
}

// detailMessage renders a FastAPI detail: a string as is; a 422's list of
// {"loc": [...], "msg": ...} as "loc.path: msg; …"; anything else as JSON.
func detailMessage(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		var parts []string
		for _, item := range v {
			m, ok := item.(map[string]any)
			msg, _ := m["msg"].(string)
			if !ok || msg == "" {
				b, _ := json.Marshal(item)
				parts = append(parts, string(b))
				continue
			}
			var loc []string
			if l, ok := m["loc"].([]any); ok {
				for _, p := range l {
					loc = append(loc, fmt.Sprint(p))
				}
			}
			if len(loc) > 0 {
				msg = strings.Join(loc, ".") + ": " + msg
			}
			parts = append(parts, msg)
		}
		return strings.Join(parts, "; ")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// malformed builds an ErrMalformed error about route.
func malformed(route, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrMalformed, route, fmt.Sprintf(format, args...))
}

// decode unmarshals a reply of route, reporting invalid JSON as
// ErrMalformed with the start and end of the body.
func decode(route string, data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return malformed(route, "%v (body %d bytes: %s)", err, len(data), snippet(data))
	}
	return nil
}

func snippet(data []byte) string {
	const n = 160
	if len(data) <= n {
		return strconv.Quote(string(data))
	}
	return strconv.Quote(string(data[:n/2])) + "…" + strconv.Quote(string(data[len(data)-n/2:]))
}

// newIdempotencyKey returns a fresh key for one logical call; the SDK
// sends one (X-Idempotency-Key) on every POST, the same across retries.
func newIdempotencyKey() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return "agentrl-retry-" + hex.EncodeToString(b[:])
}
