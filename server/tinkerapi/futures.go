package tinkerapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	wire "github.com/agentrl/agentrl/client/tinker"
	"github.com/agentrl/agentrl/internal/httpapi"
)

// future is the result of one queued request, as the JSON retrieve_future
// returns.
type future struct {
	id       string
	done     chan struct{} // closed once result is set
	result   []byte
	finished time.Time
}

// userError is a request that failed for a reason of its own (a bad
// checkpoint path, a mismatched load): its result's category is "user",
// which the SDK does not retry.
type userError struct{ msg string }

func (e *userError) Error() string { return e.msg }

func userErrorf(format string, args ...any) error {
	return &userError{msg: fmt.Sprintf(format, args...)}
}

// sweepEvery is how many futures are made between sweeps of the finished
// ones past their TTL.
const sweepEvery = 256

// newFuture registers a pending future.
func (s *Server) newFuture() *future {
	f := &future{id: httpapi.NewID("req_"), done: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.futures[f.id] = f
	if s.created++; s.created%sweepEvery == 0 {
		cut := time.Now().Add(-s.opts.FutureTTL)
		for id, g := range s.futures {
			select {
			case <-g.done:
				if g.finished.Before(cut) {
					delete(s.futures, id)
				}
			default:
			}
		}
	}
	return f
}

// finish sets a future's result: v as JSON, or, when err is set, a
// RequestFailedResponse of category user (a *userError) or server.
func (s *Server) finish(f *future, v any, err error) {
	if err == nil {
		data, merr := json.Marshal(v)
		if merr == nil {
			s.complete(f, data)
			return
		}
		err = fmt.Errorf("encoding the result: %w", merr)
	}
	cat := wire.CategoryServer
	var ue *userError
	if errors.As(err, &ue) {
		cat = wire.CategoryUser
	} else if s.ctx.Err() == nil {
		s.log.Error("tinker request failed", "request_id", f.id, "err", err)
	}
	data, _ := json.Marshal(wire.RequestFailedResponse{Error: err.Error(), Category: cat})
	s.complete(f, data)
}

func (s *Server) complete(f *future, data []byte) {
	s.mu.Lock()
	f.result, f.finished = data, time.Now()
	s.mu.Unlock()
	close(f.done)
}

// futureResponse is the immediate reply of a queued request.
func futureResponse(id string, modelID *string) wire.FutureResponse {
	return wire.FutureResponse{RequestID: id, FutureID: id, Status: "pending", ModelID: modelID}
}

// retrieveFuture long-polls a request: it answers the result as soon as it
// is ready, 408 when RetrieveWait passes first (the SDK asks again), 404
// for an unknown request id.
func (s *Server) retrieveFuture(w http.ResponseWriter, r *http.Request) {
	body, herr := s.readBody(w, r)
	if herr != nil {
		writeError(w, herr)
		return
	}
	var req wire.RetrieveFutureRequest
	if err := decode(body, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	s.mu.Lock()
	f, ok := s.futures[req.RequestID]
	s.mu.Unlock()
	if !ok {
		writeError(w, notFound("Future not found: %q", req.RequestID))
		return
	}
	t := time.NewTimer(s.opts.RetrieveWait)
	defer t.Stop()
	select {
	case <-f.done:
	case <-t.C:
		writeError(w, errorf(http.StatusRequestTimeout, "Timeout waiting for result"))
		return
	case <-r.Context().Done():
		return // nobody reads the reply
	case <-s.closing:
		writeError(w, errorf(http.StatusServiceUnavailable, "the server is shutting down"))
		return
	}
	s.mu.Lock()
	data := f.result
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, json.RawMessage(data))
}
