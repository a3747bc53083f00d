package vllm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is returned by calls made after Close.
var ErrClosed = errors.New("vllm: client is closed")

// ErrMalformed is wrapped by the errors for replies that arrived whole but
// do not have the expected shape: invalid or truncated JSON, a missing
// field, the wrong number of choices, lengths that disagree.
var ErrMalformed = errors.New("vllm: malformed response")

// HTTPError is a reply with a status other than 2xx.
type HTTPError struct {
	// URL is the request's URL.
	URL string
	// StatusCode is the HTTP status.
	StatusCode int
	// Message is the server's error message ({"error": {"message": ...}}),
	// or the start of the body when it has no such field.
	Message string
}

// Error implements error.
func (e *HTTPError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	return fmt.Sprintf("%s: HTTP %d: %s", e.URL, e.StatusCode, msg)
}

// Temporary reports whether the status is one a retry may cure: 429 and
// 5xx other than 501 Not Implemented and 505 HTTP Version Not Supported.
func (e *HTTPError) Temporary() bool {
	c := e.StatusCode
	return c == http.StatusTooManyRequests ||
		c >= 500 && c != http.StatusNotImplemented && c != http.StatusHTTPVersionNotSupported
}

// retryable marks an attempt's error as worth another attempt.
type retryable struct {
	err error
	// after is the server's Retry-After, 0 when absent.
	after time.Duration
}

func (r *retryable) Error() string { return r.err.Error() }
func (r *retryable) Unwrap() error { return r.err }

// maxRetryAfter caps a server's Retry-After.
const maxRetryAfter = 5 * time.Minute

// maxErrorBody caps how much of an error reply is read.
const maxErrorBody = 64 << 10

// endpoint is one server.
type endpoint struct {
	base     string // scheme://host[:port][/prefix], no trailing slash
	inflight atomic.Int64
	// avoidUntil (UnixNano) keeps the balancer away after a failure.
	avoidUntil atomic.Int64
}

// balancer picks the endpoint with the fewest requests in flight.
type balancer struct {
	eps  []*endpoint
	mu   sync.Mutex
	next int // round-robin start for ties
}

func (b *balancer) pick() *endpoint {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now().UnixNano()
	var best *endpoint
	bestAvoid := true
	n := len(b.eps)
	for k := range n {
		ep := b.eps[(b.next+k)%n]
		avoid := ep.avoidUntil.Load() > now
		switch {
		case best == nil,
			bestAvoid && !avoid,
			bestAvoid == avoid && ep.inflight.Load() < best.inflight.Load():
			best, bestAvoid = ep, avoid
		}
	}
	b.next = (b.next + 1) % n
	return best
}

// post sends body to path, on ep or, when ep is nil, on the endpoint the
// balancer picks for each attempt, and returns the body of the 2xx reply.
func (c *Client) post(ctx context.Context, ep *endpoint, path string, in any) ([]byte, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("vllm: encoding request: %w", err)
	}
	return c.do(ctx, ep, http.MethodPost, path, body)
}

// get is post for GET requests.
func (c *Client) get(ctx context.Context, ep *endpoint, path string) ([]byte, error) {
	return c.do(ctx, ep, http.MethodGet, path, nil)
}

func (c *Client) do(ctx context.Context, ep *endpoint, method, path string, body []byte) ([]byte, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	r := c.opts.Retry
	var firstFailure time.Time
	for attempt := 1; ; attempt++ {
		target := ep
		if target == nil {
			target = c.bal.pick()
		}
		target.inflight.Add(1)
		data, err := c.attempt(ctx, target, method, path, body)
		target.inflight.Add(-1)
		if err == nil {
			return data, nil
		}
		var re *retryable
		if !errors.As(err, &re) {
			return nil, err
		}
		if firstFailure.IsZero() {
			firstFailure = time.Now()
		}
		if attempt >= r.MaxAttempts && time.Since(firstFailure) >= r.Outage {
			switch {
			case r.Outage > 0:
				return nil, fmt.Errorf("%w (gave up after %d attempts over %v, Retry.Outage)", re.err, attempt, time.Since(firstFailure).Round(time.Second))
			case attempt > 1:
				return nil, fmt.Errorf("%w (gave up after %d attempts)", re.err, attempt)
			}
			return nil, re.err
		}
		delay := r.delay(attempt)
		if re.after > delay {
			delay = min(re.after, maxRetryAfter)
		}
		target.avoidUntil.Store(time.Now().Add(delay).UnixNano())
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < delay {
			return nil, fmt.Errorf("%w (no time left to retry: attempt %d, next in %v)", re.err, attempt, delay.Round(time.Millisecond))
		}
		if attempt < r.MaxAttempts {
			c.log.Warn("vllm: retrying request", "method", method, "url", target.base+path,
				"attempt", attempt, "max_attempts", r.MaxAttempts, "delay", delay, "err", re.err)
		} else if attempt == r.MaxAttempts || attempt%10 == 0 {
			c.log.Warn("vllm: server unavailable; waiting for it within the outage budget", "method", method, "url", target.base+path,
				"attempt", attempt, "down_for", time.Since(firstFailure).Round(time.Second), "outage_budget", r.Outage, "err", re.err)
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("vllm: %s %s: %w (while waiting to retry: %v)", method, target.base+path, ctx.Err(), re.err)
		}
	}
}

// attempt makes one HTTP request. Errors worth retrying are *retryable.
func (c *Client) attempt(ctx context.Context, ep *endpoint, method, path string, body []byte) ([]byte, error) {
	url := ep.base + path
	actx, cancel := context.WithTimeout(ctx, c.opts.AttemptTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(actx, method, url, rd)
	if err != nil {
		return nil, fmt.Errorf("vllm: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, actx, method, url, err)
	}
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		herr := &HTTPError{URL: url, StatusCode: resp.StatusCode, Message: errorMessage(data)}
		err := fmt.Errorf("vllm: %s %w", method, herr)
		if herr.Temporary() {
			return nil, &retryable{err: err, after: retryAfter(resp.Header.Get("Retry-After"))}
		}
		return nil, err
	}
	limit := c.opts.MaxResponseBytes
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, c.transportError(ctx, actx, method, url, fmt.Errorf("reading response: %w", err))
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("vllm: %s %s: response larger than %d bytes (Options.MaxResponseBytes)", method, url, limit)
	}
	return data, nil
}

// transportError classifies a failed exchange: the caller's context ending
// is final; the attempt's own timeout and network errors are retryable.
func (c *Client) transportError(ctx, actx context.Context, method, url string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("vllm: %s %s: %w", method, url, ctx.Err())
	}
	if actx.Err() != nil {
		return &retryable{err: fmt.Errorf("vllm: %s %s: attempt timed out after %v (Options.AttemptTimeout)", method, url, c.opts.AttemptTimeout)}
	}
	return &retryable{err: fmt.Errorf("vllm: %s %s: %w", method, url, err)}
}

// errorMessage extracts the message of an error body.
func errorMessage(data []byte) string {
	var eb errorBody
	if json.Unmarshal(data, &eb) == nil {
		for _, v := range []any{eb.Error, eb.Message, eb.Detail} {
			if s := messageOf(v); s != "" {
				return s
			}
		}
	}
	s := strings.TrimSpace(string(data))
	if len(s) > 512 {
		s = s[:512] + "…"
	}
	return s
}

func messageOf(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case map[string]any:
		if m, ok := v["message"].(string); ok && m != "" {
			return m
		}
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// retryAfter parses a Retry-After header: delay-seconds or an HTTP date.
func retryAfter(h string) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil {
		if s < 0 {
			return 0
		}
		return min(time.Duration(s)*time.Second, maxRetryAfter)
	}
	if t, err := http.ParseTime(h); err == nil {
		return min(max(time.Until(t), 0), maxRetryAfter)
	}
	return 0
}

// Retry says how failed attempts are retried.
type Retry struct {
	// MaxAttempts is the number of attempts per request, the first
	// included (default 4; 1 disables retries).
	MaxAttempts int
	// BaseDelay is the delay before the first retry (default 200ms); it
	// doubles at every further retry, up to MaxDelay (default 10s). Each
	// delay is drawn uniformly from [d/2, d].
	BaseDelay, MaxDelay time.Duration
	// Outage keeps retrying past MaxAttempts, at MaxDelay, for this long
	// after a request's first failure: a server that restarts (a vLLM
	// engine loading its weights takes minutes) is waited for instead of
	// failing the request. 0 (the default) stops at MaxAttempts. Only
	// failures a retry may cure count: network errors, timeouts, 429 and
	// 5xx; the caller's context still bounds the wait.
	Outage time.Duration
}

func (r Retry) delay(attempt int) time.Duration {
	d := r.BaseDelay
	for i := 1; i < attempt && d < r.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, r.MaxDelay)
	return d/2 + rand.N(d/2+1)
}

// malformed builds an ErrMalformed error.
func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// decode unmarshals a reply, reporting invalid or truncated JSON as
// ErrMalformed.
func decode(path string, data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return malformed("%s: %v (body %d bytes: %s)", path, err, len(data), snippet(data))
	}
	return nil
}

func snippet(data []byte) string {
	const n = 120
	if len(data) <= n {
		return strconv.Quote(string(data))
	}
	return strconv.Quote(string(data[:n/2])) + "…" + strconv.Quote(string(data[len(data)-n/2:]))
}
