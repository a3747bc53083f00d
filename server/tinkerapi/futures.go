package tinkerapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	wire "github.com/agentrl/agentrl/client/tinker"
	"github.com/agentrl/agentrl/internal/httpapi"
)

// future is the result of one queued request, as the JSON retrieve_future
// returns.
type future struct {
	id        string
	done      chan struct{} // closed once result is set
	result    []byte
	finished  time.Time
	reserved  int64     // bytes counted for it while pending: the most its result may take
	retrieved time.Time // when retrieve_future first returned it; zero before
	// kind is what the result is, for those a client may take as
	// protobuf: resultForward or resultSample; "" for the others.
	kind string
}

// Results that SDK 0.25.0 reads as protobuf (future.kind).
const (
	resultForward = "forward"
	resultSample  = "sample"
)

// userError is a request that failed for a reason of its own (a bad
// checkpoint path, a mismatched load): its result's category is "user",
// which the SDK does not retry.
type userError struct{ msg string }

func (e *userError) Error() string { return e.msg }

func userErrorf(format string, args ...any) error {
	return &userError{msg: fmt.Sprintf(format, args...)}
}

// retrievedGrace is how long a result stays after retrieve_future first
// returned it, for a client whose reply was lost on the way and that asks
// again; then it is freed. Under pressure (MaxFutures or MaxFutureBytes
// reached) retrieved results go first, grace or not.
const retrievedGrace = 30 * time.Second

// Per-result sizes, for the bytes a pending request reserves: a request's
// result cannot be larger than its estimate, so the futures' bytes stay
// within MaxFutureBytes however many finish at once.
const (
	smallResultBytes = 4 << 10 // a result without per-token values
	// perValueBytes is the most JSON one reported number takes: a
	// float64 in its shortest form is at most 24 characters, with its
	// separator and, for a sampled token, its id.
	perValueBytes = 32
)

// newFuture registers a pending future whose result takes at most est
// bytes. Over MaxFutures or MaxFutureBytes it frees the retrieved and
// expired results first, and refuses with 429 when that is not enough:
// results are kept until their client takes them, so new work must wait
// for that.
func (s *Server) newFuture(est int64) (*future, error) {
	est = max(est, smallResultBytes)
	if est > s.opts.MaxFutureBytes {
		return nil, badRequest("the result of this request could take %d bytes, over this server's limit of %d for the results it holds (MaxFutureBytes): ask for fewer samples, tokens or log-probs",
			est, s.opts.MaxFutureBytes)
	}
	f := &future{id: httpapi.NewID("req_"), done: make(chan struct{}), reserved: est}
	s.mu.Lock()
	defer s.mu.Unlock()
	full := func() bool {
		return len(s.futures) >= s.opts.MaxFutures || s.futureBytes+est > s.opts.MaxFutureBytes
	}
	if full() {
		s.sweepLocked(time.Now(), true)
	}
	if full() {
		return nil, errorf(http.StatusTooManyRequests,
			"this server holds %d results (%d bytes) not yet retrieved or still pending, its limit being %d results and %d bytes: retrieve them (retrieve_future) before submitting more",
			len(s.futures), s.futureBytes, s.opts.MaxFutures, s.opts.MaxFutureBytes)
	}
	s.futures[f.id] = f
	s.futureBytes += est
	return f, nil
}

// dropFuture forgets a pending future that was never queued.
func (s *Server) dropFuture(f *future) {
	s.mu.Lock()
	if _, ok := s.futures[f.id]; ok {
		delete(s.futures, f.id)
		s.futureBytes -= f.reserved
	}
	s.mu.Unlock()
}

// sweepLocked frees the results past FutureTTL and those retrieved more
// than retrievedGrace ago; with pressure, every retrieved one. s.mu is
// held.
func (s *Server) sweepLocked(now time.Time, pressure bool) {
	expired := now.Add(-s.opts.FutureTTL)
	taken := now.Add(-retrievedGrace)
	for id, f := range s.futures {
		if f.finished.IsZero() {
			continue // pending: its worker still has it
		}
		if f.finished.Before(expired) || !f.retrieved.IsZero() && (pressure || f.retrieved.Before(taken)) {
			delete(s.futures, id)
			s.futureBytes -= int64(len(f.result))
		}
	}
}

// sweeper frees expired and retrieved results in the background, so that
// memory is given back when no new request comes to trigger it.
func (s *Server) sweeper() {
	defer s.wg.Done()
	t := time.NewTicker(min(s.opts.FutureTTL/4, retrievedGrace))
	defer t.Stop()
	for {
		select {
		case <-s.closing:
			return
		case now := <-t.C:
			s.mu.Lock()
			s.sweepLocked(now, false)
			s.mu.Unlock()
		}
	}
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
	if _, ok := s.futures[f.id]; ok {
		s.futureBytes += int64(len(data)) - f.reserved
	}
	s.mu.Unlock()
	close(f.done)
}

// futureResponse is the immediate reply of a queued request.
func futureResponse(id string, modelID *string) wire.FutureResponse {
	return wire.FutureResponse{RequestID: id, FutureID: id, Status: "pending", ModelID: modelID}
}

// retrieveFuture long-polls a request: it answers the result as soon as it
// is ready, 408 when RetrieveWait passes first (the SDK asks again), 404
// for an unknown request id (or one whose result was freed).
func (s *Server) retrieveFuture(w http.ResponseWriter, r *http.Request) {
	body, herr := s.readBody(w, r, smallBodyBytes)
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
	if f.retrieved.IsZero() {
		f.retrieved = time.Now()
	}
	s.mu.Unlock()
	if f.kind != "" && !s.opts.JSONOnly && strings.Contains(strings.ToLower(r.Header.Get("Accept")), wire.ContentTypeProto) {
		pb, err := protoResult(f.kind, data)
		if err != nil {
			s.fail(w, r, fmt.Errorf("encoding the result as protobuf: %w", err))
			return
		}
		if pb != nil {
			w.Header().Set("Content-Type", wire.ContentTypeProto)
			w.WriteHeader(http.StatusOK)
			w.Write(pb)
			return
		}
	}
	writeJSON(w, http.StatusOK, json.RawMessage(data))
}

// protoResult encodes a result kept as JSON as the SDK's protobuf
// message of its kind; nil for a failure's result, which stays JSON (the
// SDK reads errors as JSON whatever it asked for).
func protoResult(kind string, data []byte) ([]byte, error) {
	var fail struct {
		Error *string `json:"error"`
	}
	if json.Unmarshal(data, &fail) == nil && fail.Error != nil {
		return nil, nil
	}
	switch kind {
	case resultForward:
		var out wire.ForwardBackwardOutput
		if err := json.Unmarshal(data, &out); err != nil {
			return nil, err
		}
		return out.MarshalProto()
	case resultSample:
		var out wire.SampleResponse
		if err := json.Unmarshal(data, &out); err != nil {
			return nil, err
		}
		return out.MarshalProto()
	}
	return nil, fmt.Errorf("no protobuf form for a %s result", kind)
}
