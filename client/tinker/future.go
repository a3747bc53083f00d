package tinker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
)

// Future is the pending result of a submitted request: its request id,
// resolved by long-polling retrieve_future. It is safe for concurrent
// use; the result, once fetched, is kept and returned by every Wait.
type Future[T any] struct {
	c      *Client
	route  string
	decode func([]byte) (T, error)
	// decodeProto decodes a protobuf result, for the routes whose results
	// may come so (accept says so); nil for the others.
	decodeProto func([]byte) (T, error)
	accept      string
	// resubmit, when set, submits the request again and returns the new
	// request id: for requests whose result depends on nothing but the
	// request (asample), after the server lost the result or failed on
	// its side.
	resubmit func(ctx context.Context) (string, error)

	idMu      sync.Mutex // guards requestID, which a resubmission changes
	requestID string

	// lock is held by Wait: a one-slot semaphore so that a Wait queued
	// behind another still respects its ctx.
	lock chan struct{}
	done bool
	val  T
	err  error
}

// RequestID returns the server's id of the request.
func (f *Future[T]) RequestID() string {
	f.idMu.Lock()
	defer f.idMu.Unlock()
	return f.requestID
}

// submit sends a JSON request that the server answers with a future
// whose result is JSON.
func submit[T any](ctx context.Context, c *Client, route string, body []byte, dec func([]byte) (T, error)) (*Future[T], error) {
	return submitCall(ctx, c, route, call{method: http.MethodPost, route: route, body: body}, "", dec, nil)
}

// submitCall sends cl, which the server answers with a future, named
// route in errors; the result is asked for with accept (JSON when empty)
// and decoded by dec, or by decProto when it comes as protobuf.
func submitCall[T any](ctx context.Context, c *Client, route string, cl call, accept string, dec, decProto func([]byte) (T, error)) (*Future[T], error) {
	id, err := c.submitRaw(ctx, cl)
	if err != nil {
		return nil, err
	}
	return newFuture(c, route, id, accept, dec, decProto), nil
}

func newFuture[T any](c *Client, route, id, accept string, dec, decProto func([]byte) (T, error)) *Future[T] {
	return &Future[T]{c: c, route: route, requestID: id, decode: dec, decodeProto: decProto, accept: accept, lock: make(chan struct{}, 1)}
}

// submitRaw sends cl and returns the request id of the future it
// answers.
func (c *Client) submitRaw(ctx context.Context, cl call) (string, error) {
	r, err := c.doCall(ctx, cl)
	if err != nil {
		return "", err
	}
	var fr FutureResponse
	if err := decode(cl.route, r.data, &fr); err != nil {
		return "", err
	}
	if fr.RequestID == "" {
		return "", malformed(cl.route, "future reply has no request_id (body %s)", snippet(r.data))
	}
	return fr.RequestID, nil
}

// Wait polls retrieve_future until the result is ready, then decodes and
// checks it. It gives up when ctx ends (returning an error that wraps
// ctx's), after Options.FutureTimeout (ErrFutureTimeout), when the server
// does not know the request (ErrUnknownRequest), or when the request
// failed (*APIError).
func (f *Future[T]) Wait(ctx context.Context) (T, error) {
	select {
	case f.lock <- struct{}{}:
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("tinker: waiting for %s request %s: %w", f.route, f.RequestID(), context.Cause(ctx))
	}
	defer func() { <-f.lock }()
	if f.done {
		return f.val, f.err
	}
	v, err := f.wait(ctx)
	// A caller giving up says nothing about the result: a later Wait may
	// still fetch it.
	if ctx.Err() == nil {
		f.done, f.val, f.err = true, v, err
	}
	return v, err
}

func (f *Future[T]) wait(ctx context.Context) (T, error) {
	var zero T
	c := f.c
	wctx := ctx
	limit := c.opts.FutureTimeout
	if limit > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeoutCause(ctx, limit, ErrFutureTimeout)
		defer cancel()
	}
	timedOut := func() error {
		return fmt.Errorf("%w: %s request %s unresolved after %v (Options.FutureTimeout)", ErrFutureTimeout, f.route, f.requestID, limit)
	}
	canceled := func() error {
		return fmt.Errorf("tinker: waiting for %s request %s: %w", f.route, f.requestID, context.Cause(ctx))
	}
	retries, resubmits := 0, 0
	for {
		if c.closed.Load() {
			return zero, ErrClosed
		}
		switch {
		case ctx.Err() != nil:
			return zero, canceled()
		case wctx.Err() != nil:
			return zero, timedOut()
		}
		body, _ := json.Marshal(RetrieveFutureRequest{RequestID: f.requestID, AllowMetadataOnly: false})
		rep, err := c.exchange(wctx, call{method: http.MethodPost, route: "retrieve_future", body: body, accept: f.accept}, "", c.opts.PollTimeout)
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return zero, canceled()
			case wctx.Err() != nil:
				return zero, timedOut()
			}
			var tr *transient
			var aerr *APIError
			switch {
			case errors.As(err, &tr) && (tr.timedOut || isStatus(err, http.StatusRequestTimeout)):
				// The server (or our poll deadline) ended a long poll:
				// the result is not ready, ask again. Not a failure.
				retries = 0
				continue
			case errors.As(err, &tr):
				if err := c.backoff(wctx, "retrieve_future", retries, tr); err != nil {
					if ctx.Err() == nil && wctx.Err() != nil {
						return zero, timedOut()
					}
					return zero, f.annotate(err)
				}
				retries++
				continue
			case errors.As(err, &aerr) && (aerr.Status == http.StatusNotFound || aerr.Status == http.StatusGone):
				aerr.Route, aerr.RequestID, aerr.kind = f.route, f.requestID, ErrUnknownRequest
				aerr.Message = "retrieve_future: " + aerr.Message
				if aerr.Status == http.StatusGone && f.resubmit != nil && resubmits < c.opts.MaxRetries {
					resubmits++
					if err := f.again(wctx, aerr); err != nil {
						return zero, err
					}
					continue
				}
				return zero, aerr
			case errors.As(err, &aerr):
				// SkyRL reports a failed request as HTTP 400 with the
				// failure as detail, 500 when it cannot say more.
				aerr.Route, aerr.RequestID = f.route, f.requestID
				aerr.Message = "retrieve_future: " + aerr.Message
				return zero, aerr
			}
			return zero, err
		}
		retries = 0
		if rep.isProto() {
			if f.decodeProto == nil {
				return zero, f.annotate(malformed("retrieve_future", "a protobuf result, which was not asked for (%d bytes)", len(rep.data)))
			}
			v, err := f.decodeProto(rep.data)
			if err != nil {
				return zero, f.annotate(err)
			}
			return v, nil
		}
		data := rep.data
		var probe struct {
			Type     string  `json:"type"`
			Status   string  `json:"status"`
			Error    *string `json:"error"`
			Category string  `json:"category"`
		}
		if err := decode("retrieve_future", data, &probe); err != nil {
			return zero, f.annotate(err)
		}
		switch {
		case probe.Type == TypeTryAgain, probe.Status == "complete_metadata":
			// Pending (or, had we allowed it, a size notice): poll again.
			continue
		case probe.Error != nil:
			cat := probe.Category
			if cat == "" {
				cat = CategoryUnknown
			}
			aerr := &APIError{
				Route:     f.route,
				RequestID: f.requestID,
				Category:  cat,
				Message:   *probe.Error,
				Retryable: cat != CategoryUser,
			}
			if aerr.Retryable && f.resubmit != nil && resubmits < c.opts.MaxRetries {
				resubmits++
				if err := f.again(wctx, aerr); err != nil {
					return zero, err
				}
				continue
			}
			return zero, aerr
		}
		v, err := f.decode(data)
		if err != nil {
			return zero, f.annotate(err)
		}
		return v, nil
	}
}

// again resubmits the request after failure, switching the future to the
// new request id.
func (f *Future[T]) again(ctx context.Context, failure error) error {
	f.c.log.Warn("tinker: submitting the request again", "route", f.route, "request_id", f.requestID, "err", failure)
	id, err := f.resubmit(ctx)
	if err != nil {
		return fmt.Errorf("%w (submitting again after: %v)", err, failure)
	}
	f.idMu.Lock()
	f.requestID = id
	f.idMu.Unlock()
	return nil
}

// annotate names the future in an error about it.
func (f *Future[T]) annotate(err error) error {
	return fmt.Errorf("%s request %s: %w", f.route, f.requestID, err)
}
