package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentrl/agentrl/internal/httpapi"

	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/server/openaiapi"
)

// EpisodeHeader names the episode a model request belongs to.
const EpisodeHeader = openaiapi.TagHeader

// Options configure a Gateway.
type Options struct {
	// MaxRequests is each episode's deadline: the most model requests it
	// may make (default 32). The request past it is refused and the
	// episode dropped.
	MaxRequests int
	// Seed determines the sampling seed of every episode request (the
	// seed an agent sends is overridden), so that the same agent makes
	// the same run.
	Seed uint64
	// API configures the OpenAI server (its Logger defaults to Logger).
	API openaiapi.Options
	// Logger receives the gateway's logs (default slog.Default()).
	Logger *slog.Logger
	// Verify, when set, scores an answer to a task (POST
	// /v1/episodes/{id}/answer): an environment plays it on the task's
	// level. Without it that route is 404 and agents report rewards.
	Verify func(task Task, answer string) (reward float64, success bool, err error)
}

// Task is what an episode plays: an environment seed and the
// environment's first observation, which the agent may use as its task.
type Task struct {
	Seed   uint64 `json:"seed"`
	Prompt string `json:"prompt,omitempty"`
}

// Episode states.
const (
	stateQueued  = "queued"  // not claimed yet
	stateClaimed = "claimed" // claimed by an agent, being played
	stateScored  = "scored"  // its reward is reported
	stateDropped = "dropped" // failed, past its deadline or timed out
)

// episode is one play of a task and what the gateway recorded of it.
type episode struct {
	id            string
	step          int
	group, sample int
	task          Task
	seed          uint64 // the episode's sampling seed

	state    string
	why      string // why it was dropped
	inflight bool
	requests int // model requests admitted
	segments []*segment

	reward  float64
	success bool
}

// requestSeed is the sampling seed of the episode's next request.
func (e *episode) requestSeed() uint64 { return mix(e.seed, uint64(e.requests)) }

// segment is a run of requests that extended each other token-exactly.
type segment struct {
	tokens   []int
	mask     []bool
	logprobs []float64
	turns    []turnRecord
}

// turnRecord is one request of a segment: its prompt ended at promptEnd,
// its reply is tokens[replyStart:replyEnd].
type turnRecord struct {
	promptEnd, replyStart, replyEnd int
	finish                          string
}

// Stats count what the gateway saw since it started.
type Stats struct {
	// Requests counts the sequences sampled for episodes; Untagged those
	// sampled for requests that named no episode (served, not recorded).
	Requests, Untagged int
	// Continued counts the requests after an episode's first; Mismatched
	// those among them whose prompt did not extend the episode's recorded
	// tokens (a new segment).
	Continued, Mismatched int
	// Refused counts episode requests refused (unknown or closed
	// episode, past the deadline, two at once).
	Refused int
	// Scored and Dropped count finished episodes.
	Scored, Dropped int
}

// Gateway serves a policy over the OpenAI API and records the episodes
// agent programs play through it.
type Gateway struct {
	opts Options
	log  *slog.Logger
	rec  *recorder
	api  *openaiapi.Server
	mux  *http.ServeMux
	// model is the served model's name.
	model string

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every state change
	episodes map[string]*episode
	queue    []*episode // open, unclaimed
	open     []*episode // the open step's episodes, in task order
	closed   bool
	stats    Stats
}

// New returns a gateway serving p. Close it to stop its server.
func New(p policy.Policy, opts Options) *Gateway {
	if opts.MaxRequests <= 0 {
		opts.MaxRequests = 32
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.API.Logger == nil {
		opts.API.Logger = opts.Logger
	}
	g := &Gateway{opts: opts, log: opts.Logger, changed: make(chan struct{}), episodes: map[string]*episode{}}
	var wrapped policy.Policy
	g.rec, wrapped = wrap(g, p)
	g.api = openaiapi.New(wrapped, opts.API)
	g.model = opts.API.Model
	if g.model == "" {
		g.model = p.Info().Name
	}
	if g.model == "" {
		g.model = "agentrl"
	}
	g.mux = http.NewServeMux()
	g.mux.HandleFunc("POST /v1/episodes/claim", g.handleClaim)
	g.mux.HandleFunc("POST /v1/episodes/{id}/reward", g.handleReward)
	g.mux.HandleFunc("POST /v1/episodes/{id}/fail", g.handleFail)
	g.mux.HandleFunc("POST /v1/episodes/{id}/answer", g.handleAnswer)
	g.mux.HandleFunc("GET /v1/episodes/{id}", g.handleGet)
	g.mux.Handle("/", http.HandlerFunc(g.serveAPI))
	return g
}

// Close stops the server; agents waiting for a task are told there are no
// more (410).
func (g *Gateway) Close() error {
	g.mu.Lock()
	g.closed = true
	g.notify()
	g.mu.Unlock()
	return g.api.Close()
}

// ServeHTTP serves the OpenAI API and the episode routes.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.mux.ServeHTTP(w, r) }

// Stats returns the counters so far.
func (g *Gateway) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stats
}

// Update runs fn, which changes the served weights, while no request
// samples: requests made meanwhile wait and are served by the new weights.
func (g *Gateway) Update(fn func() error) error {
	g.rec.mu.Lock()
	defer g.rec.mu.Unlock()
	return fn()
}

// notify wakes the waiters; g.mu is held.
func (g *Gateway) notify() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// Open opens step's episodes: each task k times, in order. Episodes of an
// earlier step still open are dropped ("step closed").
func (g *Gateway) Open(step int, tasks []Task, k int) error {
	if k <= 0 || len(tasks) == 0 {
		return fmt.Errorf("gateway: a step needs tasks and k ≥ 1 (got %d tasks, k %d)", len(tasks), k)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closeStep("step closed")
	for t, task := range tasks {
		for s := range k {
			e := &episode{id: fmt.Sprintf("s%d-t%d-e%d", step, t, s), step: step, group: t, sample: s, task: task,
				seed: mix(g.opts.Seed, mix(uint64(step), mix(uint64(t), uint64(s)))), state: stateQueued}
			g.episodes[e.id] = e
			g.queue = append(g.queue, e)
			g.open = append(g.open, e)
		}
	}
	g.notify()
	return nil
}

// closeStep drops the open step's unfinished episodes and forgets the
// step; g.mu is held.
func (g *Gateway) closeStep(why string) {
	for _, e := range g.open {
		if e.state == stateQueued || e.state == stateClaimed {
			g.drop(e, why)
		}
		delete(g.episodes, e.id)
	}
	g.open, g.queue = nil, nil
}

// drop drops e; g.mu is held.
func (g *Gateway) drop(e *episode, why string) {
	e.state, e.why = stateDropped, why
	g.stats.Dropped++
	g.log.Info("episode dropped", "episode", e.id, "reason", why)
	g.notify()
}

// Wait waits until every episode of the open step is scored or dropped,
// or until ctx ends; it then drops the unfinished ones ("timed out"),
// closes the step and returns its episodes.
func (g *Gateway) Wait(ctx context.Context) (*Step, error) {
	for {
		g.mu.Lock()
		left := 0
		for _, e := range g.open {
			if e.state == stateQueued || e.state == stateClaimed {
				left++
			}
		}
		ch := g.changed
		if left == 0 || ctx.Err() != nil {
			eps := g.open
			for _, e := range eps {
				if e.state == stateQueued || e.state == stateClaimed {
					g.drop(e, "timed out")
				}
			}
			g.closeStep("")
			g.mu.Unlock()
			return g.collect(eps)
		}
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
}

// admit checks each tagged request against its episode and marks the
// admitted ones in flight; a refused one gets its Err in out. It returns
// each request's episode (nil for an untagged or refused request).
func (g *Gateway) admit(reqs []policy.Request, out []policy.Sample) []*episode {
	g.mu.Lock()
	defer g.mu.Unlock()
	eps := make([]*episode, len(reqs))
	count := map[string]int{}
	for _, q := range reqs {
		if q.Tag != "" {
			count[q.Tag]++
		}
	}
	for i, q := range reqs {
		if q.Tag == "" {
			continue
		}
		if count[q.Tag] > 1 {
			g.stats.Refused++
			out[i].Err = fmt.Errorf("episode %q asked for %d sequences at once: one at a time, n = 1", q.Tag, count[q.Tag])
			continue
		}
		e, err := g.admitOne(q.Tag)
		if err != nil {
			g.stats.Refused++
			out[i].Err = err
			continue
		}
		eps[i] = e
	}
	return eps
}

func (g *Gateway) admitOne(id string) (*episode, error) {
	e := g.episodes[id]
	switch {
	case e == nil:
		return nil, fmt.Errorf("episode %q is unknown or its step is closed", id)
	case e.state == stateQueued:
		return nil, fmt.Errorf("episode %q is not claimed (POST /v1/episodes/claim)", id)
	case e.state != stateClaimed:
		return nil, fmt.Errorf("episode %q is %s", id, e.state)
	case e.inflight:
		return nil, fmt.Errorf("episode %q has a request in flight already (one at a time, n = 1)", id)
	case e.requests >= g.opts.MaxRequests:
		g.drop(e, fmt.Sprintf("deadline: more than %d model requests", g.opts.MaxRequests))
		return nil, fmt.Errorf("episode %q passed its deadline of %d model requests and is dropped", id, g.opts.MaxRequests)
	}
	e.inflight = true
	e.requests++
	return e, nil
}

// release ends the admitted requests of a failed call.
func (g *Gateway) release(eps []*episode) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, e := range eps {
		if e != nil {
			e.inflight = false
		}
	}
}

// record appends each admitted request's prompt and sample to its episode.
func (g *Gateway) record(reqs []policy.Request, eps []*episode, out []policy.Sample) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, q := range reqs {
		e := eps[i]
		if e == nil {
			if q.Tag == "" {
				g.stats.Untagged++
			}
			continue
		}
		e.inflight = false
		s := out[i]
		if s.Err != nil || e.state != stateClaimed {
			continue
		}
		g.stats.Requests++
		var cur *segment
		if n := len(e.segments); n > 0 {
			cur = e.segments[n-1]
			g.stats.Continued++
			if !hasPrefix(q.Prompt, cur.tokens) {
				g.stats.Mismatched++
				g.log.Info("history mismatch: the prompt does not extend the episode's recorded tokens; new segment",
					"episode", e.id, "request", e.requests, "recorded", len(cur.tokens), "prompt", len(q.Prompt),
					"common_prefix", commonPrefix(q.Prompt, cur.tokens))
				cur = nil
			}
		}
		if cur == nil {
			cur = &segment{}
			e.segments = append(e.segments, cur)
		}
		rest := q.Prompt[len(cur.tokens):]
		cur.tokens = append(cur.tokens, rest...)
		cur.mask = append(cur.mask, make([]bool, len(rest))...)
		cur.logprobs = append(cur.logprobs, make([]float64, len(rest))...)
		t := turnRecord{promptEnd: len(cur.tokens), replyStart: len(cur.tokens), finish: s.Finish}
		cur.tokens = append(cur.tokens, s.Tokens...)
		for j := range s.Tokens {
			cur.mask = append(cur.mask, true)
			lp := 0.0
			if j < len(s.LogProbs) {
				lp = s.LogProbs[j]
			}
			cur.logprobs = append(cur.logprobs, lp)
		}
		t.replyEnd = len(cur.tokens)
		cur.turns = append(cur.turns, t)
	}
}

func hasPrefix(s, prefix []int) bool {
	return len(s) >= len(prefix) && slices.Equal(s[:len(prefix)], prefix)
}

func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// mix is splitmix64's finalizer over a and b.
func mix(a, b uint64) uint64 {
	z := a ^ (b+0x9e3779b97f4a7c15)*0xbf58476d1ce4e5b9
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// claimResponse is the body of a claim.
type claimResponse struct {
	Episode     string `json:"episode"`
	Task        Task   `json:"task"`
	Group       int    `json:"group"`
	Sample      int    `json:"sample"`
	Step        int    `json:"step"`
	MaxRequests int    `json:"max_requests"`
	// Model is the served model's name, for the requests' model field.
	Model string `json:"model"`
}

// handleClaim hands out the next queued episode, waiting for one up to
// ?wait=SECONDS (default 30, at most 300): 204 when none came, 410 once
// the gateway is closed.
func (g *Gateway) handleClaim(w http.ResponseWriter, r *http.Request) {
	wait := 30 * time.Second
	if v := r.URL.Query().Get("wait"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 300 {
			writeError(w, http.StatusBadRequest, "wait must be a number of seconds in [0, 300]")
			return
		}
		wait = time.Duration(f * float64(time.Second))
	}
	ctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	for {
		g.mu.Lock()
		if g.closed {
			g.mu.Unlock()
			writeError(w, http.StatusGone, "the gateway is closed: no more tasks")
			return
		}
		if len(g.queue) > 0 {
			e := g.queue[0]
			g.queue = g.queue[1:]
			e.state = stateClaimed
			resp := claimResponse{Episode: e.id, Task: e.task, Group: e.group, Sample: e.sample, Step: e.step, MaxRequests: g.opts.MaxRequests, Model: g.model}
			g.notify()
			g.mu.Unlock()
			writeJSON(w, http.StatusOK, resp)
			return
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
}

// handleReward scores a claimed episode: {"reward": R, "success": bool}.
func (g *Gateway) handleReward(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Reward  *float64 `json:"reward"`
		Success *bool    `json:"success"`
	}
	if err := readJSON(w, r, &body); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if body.Reward == nil {
		writeError(w, http.StatusBadRequest, `reward is required: {"reward": number}`)
		return
	}
	success := *body.Reward > 0
	if body.Success != nil {
		success = *body.Success
	}
	g.finish(w, r.PathValue("id"), func(e *episode) error { return g.score(e, *body.Reward, success) })
}

// score scores e; g.mu is held.
func (g *Gateway) score(e *episode, reward float64, success bool) error {
	if math.IsNaN(reward) || math.IsInf(reward, 0) {
		return errors.New("the reward must be finite")
	}
	if len(e.segments) == 0 {
		g.drop(e, "scored without model requests")
		return errors.New("the episode made no model request: dropped")
	}
	e.state, e.reward, e.success = stateScored, reward, success
	g.stats.Scored++
	g.notify()
	return nil
}

// handleAnswer scores a claimed episode by its answer with Options.Verify:
// {"answer": "..."}; the reply holds the reward.
func (g *Gateway) handleAnswer(w http.ResponseWriter, r *http.Request) {
	if g.opts.Verify == nil {
		writeError(w, http.StatusNotFound, "this gateway has no verifier: report the reward (POST /v1/episodes/{id}/reward)")
		return
	}
	var body struct {
		Answer *string `json:"answer"`
	}
	if err := readJSON(w, r, &body); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if body.Answer == nil {
		writeError(w, http.StatusBadRequest, `answer is required: {"answer": "..."}`)
		return
	}
	id := r.PathValue("id")
	g.mu.Lock()
	e := g.episodes[id]
	var task Task
	if e != nil {
		task = e.task
	}
	g.mu.Unlock()
	if e == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("episode %q is unknown or its step is closed", id))
		return
	}
	reward, success, err := g.opts.Verify(task, *body.Answer)
	if err != nil {
		// The environment failed, not the agent: the episode is dropped.
		g.finish(w, id, func(e *episode) error {
			g.drop(e, "verifier: "+err.Error())
			return fmt.Errorf("the verifier failed (%v): episode dropped", err)
		})
		return
	}
	g.finishWith(w, id, func(e *episode) error { return g.score(e, reward, success) },
		map[string]any{"reward": reward, "success": success})
}

// handleFail drops a claimed episode: {"error": "why"}.
func (g *Gateway) handleFail(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Error string `json:"error"`
	}
	if err := readJSON(w, r, &body); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if body.Error == "" {
		body.Error = "reported failed"
	}
	g.finish(w, r.PathValue("id"), func(e *episode) error {
		g.drop(e, "agent: "+body.Error)
		return nil
	})
}

// finish applies fn to a claimed episode with no request in flight.
func (g *Gateway) finish(w http.ResponseWriter, id string, fn func(*episode) error) {
	g.finishWith(w, id, fn, nil)
}

// finishWith is finish, adding extra to its reply.
func (g *Gateway) finishWith(w http.ResponseWriter, id string, fn func(*episode) error, extra map[string]any) {
	g.mu.Lock()
	e := g.episodes[id]
	var status int
	var msg string
	switch {
	case e == nil:
		status, msg = http.StatusNotFound, fmt.Sprintf("episode %q is unknown or its step is closed", id)
	case e.state != stateClaimed:
		status, msg = http.StatusConflict, fmt.Sprintf("episode %q is %s %s", id, e.state, e.why)
	case e.inflight:
		status, msg = http.StatusConflict, fmt.Sprintf("episode %q has a model request in flight", id)
	default:
		if err := fn(e); err != nil {
			status, msg = http.StatusConflict, err.Error()
		}
	}
	var state string
	if e != nil {
		state = e.state
	}
	g.mu.Unlock()
	if status != 0 {
		writeError(w, status, strings.TrimSpace(msg))
		return
	}
	resp := map[string]any{"episode": id, "state": state}
	for k, v := range extra {
		resp[k] = v
	}
	writeJSON(w, http.StatusOK, resp)
}

// handleGet reports an episode's state.
func (g *Gateway) handleGet(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	e := g.episodes[r.PathValue("id")]
	if e == nil {
		g.mu.Unlock()
		writeError(w, http.StatusNotFound, "unknown episode")
		return
	}
	resp := map[string]any{"episode": e.id, "state": e.state, "requests": e.requests, "segments": len(e.segments), "reason": e.why}
	g.mu.Unlock()
	writeJSON(w, http.StatusOK, resp)
}

// maxBody bounds the episode routes' bodies.
const maxBody = 1 << 16

// serveAPI serves the OpenAI API; a request naming its episode in
// metadata.agentrl_episode rather than the header gets the header.
func (g *Gateway) serveAPI(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.Header.Get(EpisodeHeader) == "" && strings.HasPrefix(r.URL.Path, "/v1/") {
		limit := g.opts.API.MaxRequestBytes
		if limit <= 0 {
			limit = 1 << 20
		}
		data, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		if err != nil {
			writeError(w, http.StatusBadRequest, "reading the body: "+err.Error())
			return
		}
		var body struct {
			Metadata struct {
				Episode string `json:"agentrl_episode"`
			} `json:"metadata"`
		}
		if json.Unmarshal(data, &body) == nil && body.Metadata.Episode != "" {
			r.Header.Set(EpisodeHeader, body.Metadata.Episode)
		}
		r.Body = io.NopCloser(bytes.NewReader(data))
		r.ContentLength = int64(len(data))
	}
	g.api.ServeHTTP(w, r)
}

// readJSON decodes a body of at most maxBody bytes into v; an empty body
// leaves v as it is.
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	data, err := httpapi.ReadBody(w, r, maxBody)
	if err != nil {
		return fmt.Errorf("reading the body: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	return httpapi.DecodeJSON(data, v)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	_ = httpapi.WriteJSON(w, status, v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "code": status}})
}
