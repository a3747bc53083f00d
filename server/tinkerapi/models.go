package tinkerapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	wire "github.com/agentrl/agentrl/client/tinker"
	"github.com/agentrl/agentrl/internal/atomicdir"
	"github.com/agentrl/agentrl/internal/httpapi"
	"github.com/agentrl/agentrl/model/native"
)

// DefaultLoRAAlpha is the adapters' alpha when lora_config has none, the
// value SkyRL's server fixes (Tinker's, per Thinking Machines' "LoRA
// Without Regret").
const DefaultLoRAAlpha = 32

// maxLoRARank bounds lora_config.rank, against absurd allocations.
const maxLoRARank = 4096

// Target modules of train_attn and train_mlp (native.LoRATargets' names).
var (
	attnTargets = []string{"q_proj", "k_proj", "v_proj", "o_proj"}
	mlpTargets  = []string{"gate_proj", "up_proj", "down_proj"}
)

// modelConfig is a model's training setup as the server applies it: rank 0
// trains every weight, rank > 0 trains adapters on Targets.
type modelConfig struct {
	Rank      int      `json:"rank"`
	Alpha     float64  `json:"alpha,omitempty"`
	Seed      uint64   `json:"seed,omitempty"`
	Targets   []string `json:"targets,omitempty"`
	TrainAttn bool     `json:"train_attn"`
	TrainMLP  bool     `json:"train_mlp"`
}

// wire returns the configuration as get_info reports it: adapters never
// train the unembedding, rank 0 trains everything.
func (c modelConfig) wire() *wire.LoraConfig {
	unembed, attn, mlp := c.Rank == 0, c.TrainAttn, c.TrainMLP
	lc := &wire.LoraConfig{Rank: c.Rank, TrainUnembed: &unembed, TrainAttn: &attn, TrainMLP: &mlp}
	if c.Rank > 0 {
		seed, alpha := int64(c.Seed), c.Alpha
		lc.Seed, lc.Alpha = &seed, &alpha
	}
	return lc
}

// native returns the adapters' native configuration.
func (c modelConfig) native() native.LoRAConfig {
	return native.LoRAConfig{Rank: c.Rank, Alpha: c.Alpha, Targets: c.Targets, Seed: c.Seed}
}

// model is one trained model (a Tinker "training run"). Its requests run
// one at a time on its own worker, in seq_id order.
type model struct {
	id      string
	session string
	created time.Time
	cfg     modelConfig
	wake    chan struct{} // a job was queued

	mu       sync.Mutex
	pending  []*job
	lastSeq  int                  // highest seq_id started
	seqs     map[int]seqRecord    // the seq_ids queued, for retries (at most maxSeqRecords)
	seqOrder []int                // seqs' keys in the order they came
	seqFloor int                  // the highest seq_id forgotten; math.MinInt while none was
	saving   map[string]*struct{} // "kind/name" of checkpoints being written
	closed   bool                 // unloaded: it takes no more requests

	// Owned by the worker.
	m   *native.Model
	opt *native.AdamW // nil until the first optim_step
	err error         // creating the model failed
}

// seqRecord is what a seq_id was used for: the request it started and a
// hash of its type and payload.
type seqRecord struct {
	requestID string
	hash      string
}

// job is one queued request of a model.
type job struct {
	kind    string
	fut     *future
	seq     *int
	arrived time.Time
	run     func(ctx context.Context, mod *model) (any, error)
	done    func() // after run, if set
}

func (s *Server) getModel(id string) (*model, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	mod, ok := s.models[id]
	if !ok {
		return nil, notFound("Model not found: %q", id)
	}
	return mod, nil
}

// payloadHash identifies a request's type and payload (seq_id excluded),
// so that a retry is told from a reuse of its seq_id.
func payloadHash(kind string, payload any) string {
	data, err := json.Marshal(payload)
	if err != nil {
		data = []byte(fmt.Sprintf("%#v", payload))
	}
	h := sha256.New()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// submit queues a request of mod whose result takes at most est bytes.
// A request whose seq_id was seen before with the same type and payload
// is a retry: it gets the original request id and is not queued again;
// with anything else it is a 409. reserve, if set, runs under the model's
// lock once the request is known to be new, and may refuse it.
func (s *Server) submit(mod *model, kind string, seq *int, payload any, est int64, reserve func() error,
	run func(ctx context.Context, mod *model) (any, error), done func()) (wire.FutureResponse, error) {
	hash := payloadHash(kind, payload)
	mod.mu.Lock()
	defer mod.mu.Unlock()
	if mod.closed {
		return wire.FutureResponse{}, notFound("Model not found: %q (it was unloaded)", mod.id)
	}
	if seq != nil {
		if rec, ok := mod.seqs[*seq]; ok {
			if rec.hash != hash {
				return wire.FutureResponse{}, errorf(http.StatusConflict,
					"Training request sequence number was reused: seq_id %d of model %s was used by another request", *seq, mod.id)
			}
			return futureResponse(rec.requestID, nil), nil
		}
		if *seq <= mod.seqFloor {
			return wire.FutureResponse{}, errorf(http.StatusConflict,
				"seq_id %d of model %s is at or below %d, a seq_id this server no longer remembers (it keeps the last %d): it cannot tell a retry from a reuse", *seq, mod.id, mod.seqFloor, maxSeqRecords)
		}
	}
	if len(mod.pending) >= s.opts.MaxQueuedRequests {
		return wire.FutureResponse{}, errorf(http.StatusTooManyRequests,
			"model %s has %d requests queued, this server's limit (MaxQueuedRequests): wait for their results before submitting more", mod.id, len(mod.pending))
	}
	f, err := s.newFuture(est)
	if err != nil {
		return wire.FutureResponse{}, err
	}
	if kind == "forward" || kind == "forward_backward" {
		f.kind = resultForward
	}
	if reserve != nil {
		if err := reserve(); err != nil {
			s.dropFuture(f)
			return wire.FutureResponse{}, err
		}
	}
	if seq != nil {
		mod.seqs[*seq] = seqRecord{requestID: f.id, hash: hash}
		mod.seqOrder = append(mod.seqOrder, *seq)
		for len(mod.seqOrder) > maxSeqRecords {
			old := mod.seqOrder[0]
			mod.seqOrder = mod.seqOrder[1:]
			delete(mod.seqs, old)
			mod.seqFloor = max(mod.seqFloor, old)
		}
	}
	mod.pending = append(mod.pending, &job{kind: kind, fut: f, seq: seq, arrived: time.Now(), run: run, done: done})
	select {
	case mod.wake <- struct{}{}:
	default:
	}
	return futureResponse(f.id, nil), nil
}

// pick returns the index of the job to run next: requests without a
// seq_id in arrival order, each a barrier, and before the first of them
// the queued request with the lowest seq_id.
func (mod *model) pick() int {
	if len(mod.pending) == 0 {
		return -1
	}
	best := 0
	for i := 1; i < len(mod.pending) && mod.pending[0].seq != nil && mod.pending[i].seq != nil; i++ {
		if *mod.pending[i].seq < *mod.pending[best].seq {
			best = i
		}
	}
	return best
}

// next waits for the model's next job; nil once the server closes. A job
// whose seq_id skips one waits up to gap after its arrival for the missing
// one (the SDK may send a call's chunks at once, in any order).
func (mod *model) next(closing <-chan struct{}, gap time.Duration) *job {
	for {
		mod.mu.Lock()
		var wait time.Duration
		if i := mod.pick(); i >= 0 {
			j := mod.pending[i]
			if j.seq != nil && *j.seq > mod.lastSeq+1 && gap > 0 {
				wait = time.Until(j.arrived.Add(gap))
			}
			if wait <= 0 {
				mod.pending = append(mod.pending[:i], mod.pending[i+1:]...)
				if j.seq != nil && *j.seq > mod.lastSeq {
					mod.lastSeq = *j.seq
				}
				mod.mu.Unlock()
				return j
			}
		}
		mod.mu.Unlock()
		var t *time.Timer
		var timeout <-chan time.Time
		if wait > 0 {
			t = time.NewTimer(wait)
			timeout = t.C
		}
		select {
		case <-mod.wake:
		case <-timeout:
		case <-closing:
			return nil
		}
		if t != nil {
			t.Stop()
		}
	}
}

// runModel is a model's worker. It stops when the server closes or once
// the model is unloaded.
func (s *Server) runModel(mod *model) {
	defer s.wg.Done()
	gone := errors.New("the server closed before the request ran")
	for {
		j := mod.next(s.closing, s.opts.SeqGapWait)
		if j == nil {
			break
		}
		var res any
		var err error
		if j.kind != "create_model" && j.kind != "unload_model" && mod.m == nil {
			err = fmt.Errorf("model %s could not be created: %v", mod.id, mod.err)
		} else {
			start := time.Now()
			res, err = j.run(s.ctx, mod)
			s.log.Debug("tinker job", "model_id", mod.id, "kind", j.kind, "request_id", j.fut.id,
				"duration", time.Since(start), "err", err)
		}
		if j.done != nil {
			j.done()
		}
		if j.kind == "unload_model" && err == nil {
			// Forgotten before the result is out, so that a client that
			// reads it can create a model in its place.
			s.mu.Lock()
			delete(s.models, mod.id)
			s.mu.Unlock()
			mod.m, mod.opt = nil, nil
			gone = userErrorf("model %s was unloaded before the request ran", mod.id)
			s.log.Info("tinker model unloaded", "model_id", mod.id)
			s.finish(j.fut, res, nil)
			break
		}
		s.finish(j.fut, res, err)
	}
	mod.mu.Lock()
	rest := mod.pending
	mod.pending, mod.closed = nil, true
	mod.mu.Unlock()
	for _, j := range rest {
		if j.done != nil {
			j.done()
		}
		s.finish(j.fut, nil, gone)
	}
}

// resolveConfig turns create_model's lora_config into the setup the
// server applies.
func (s *Server) resolveConfig(lc *wire.LoraConfig) (modelConfig, error) {
	if lc == nil {
		return modelConfig{}, badRequest("lora_config is required (rank > 0 trains LoRA adapters; rank 0 trains every weight)")
	}
	switch {
	case lc.Rank < 0:
		return modelConfig{}, badRequest("lora_config.rank must not be negative, got %d", lc.Rank)
	case lc.Rank > maxLoRARank:
		return modelConfig{}, badRequest("lora_config.rank %d exceeds %d", lc.Rank, maxLoRARank)
	}
	if lc.Rank > 0 && (lc.TrainUnembed == nil || *lc.TrainUnembed) {
		s.unembedOnce.Do(func() {
			s.log.Warn("lora_config.train_unembed is not supported: the adapters never train the unembedding (LM head); it stays as in the base model")
		})
	}
	if lc.Rank == 0 {
		return modelConfig{TrainAttn: true, TrainMLP: true}, nil
	}
	c := modelConfig{Rank: lc.Rank, Alpha: DefaultLoRAAlpha, TrainAttn: true, TrainMLP: true}
	if lc.Alpha != nil {
		if a := *lc.Alpha; !(a > 0) || math.IsInf(a, 0) {
			return modelConfig{}, badRequest("lora_config.alpha must be positive and finite, got %v", a)
		}
		c.Alpha = *lc.Alpha
	}
	if lc.TrainAttn != nil {
		c.TrainAttn = *lc.TrainAttn
	}
	if lc.TrainMLP != nil {
		c.TrainMLP = *lc.TrainMLP
	}
	if c.TrainAttn {
		c.Targets = append(c.Targets, attnTargets...)
	}
	if c.TrainMLP {
		c.Targets = append(c.Targets, mlpTargets...)
	}
	if len(c.Targets) == 0 {
		return modelConfig{}, badRequest("lora_config: train_attn and train_mlp are both false, which leaves nothing to train (train_unembed is not supported)")
	}
	if lc.Seed != nil {
		c.Seed = uint64(*lc.Seed)
	} else {
		c.Seed = httpapi.RandomSeed() >> 1 // positive as an int64, as get_info reports it
	}
	return c, nil
}

// modelRecord is Dir/<model_id>/model.json: what a model was created as.
type modelRecord struct {
	ModelID   string      `json:"model_id"`
	BaseModel string      `json:"base_model"`
	Session   string      `json:"session_id"`
	Config    modelConfig `json:"config"`
	Created   time.Time   `json:"created"`
}

func (s *Server) createModel(_ *http.Request, body []byte) (any, error) {
	var req wire.CreateModelRequest
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	if !s.hasSession(req.SessionID) {
		return nil, notFound("Session not found: %q", req.SessionID)
	}
	if err := s.checkBase(req.BaseModel); err != nil {
		return nil, err
	}
	cfg, err := s.resolveConfig(req.LoraConfig)
	if err != nil {
		return nil, err
	}
	mod := &model{
		id: httpapi.NewID("model_"), session: req.SessionID, created: time.Now(), cfg: cfg,
		wake: make(chan struct{}, 1), seqs: map[int]seqRecord{}, seqFloor: math.MinInt, saving: map[string]*struct{}{},
	}
	s.mu.Lock()
	if n := len(s.models); n >= s.opts.MaxModels {
		s.mu.Unlock()
		return nil, errorf(http.StatusTooManyRequests,
			"this server holds %d models, its limit (MaxModels; trainer serve -tinker-max-models): unload one (unload_model) before creating another", n)
	}
	s.models[mod.id] = mod
	s.mu.Unlock()
	resp, err := s.submit(mod, "create_model", nil, req, 0, nil, s.runCreateModel, nil)
	if err != nil {
		s.mu.Lock()
		delete(s.models, mod.id)
		s.mu.Unlock()
		return nil, err
	}
	s.wg.Add(1)
	go s.runModel(mod)
	id := mod.id
	resp.ModelID = &id
	return resp, nil
}

// runCreateModel builds the model: a copy of the base weights, with fresh
// adapters for rank > 0.
func (s *Server) runCreateModel(_ context.Context, mod *model) (any, error) {
	m := s.cloneBase()
	if mod.cfg.Rank > 0 {
		if err := m.EnableLoRA(mod.cfg.native()); err != nil {
			mod.err = err
			return nil, userErrorf("lora_config: %v", err)
		}
	}
	rec, err := json.MarshalIndent(modelRecord{ModelID: mod.id, BaseModel: s.model, Session: mod.session, Config: mod.cfg, Created: mod.created}, "", "  ")
	if err == nil {
		err = atomicdir.Write(filepath.Join(s.opts.Dir, mod.id), func(tmp string) error {
			return writeSynced(filepath.Join(tmp, "model.json"), append(rec, '\n'))
		})
	}
	if err != nil {
		mod.err = err
		return nil, fmt.Errorf("recording the model: %w", err)
	}
	mod.m = m
	s.log.Info("tinker model created", "model_id", mod.id, "lora_rank", mod.cfg.Rank, "targets", mod.cfg.Targets,
		"trainable", m.NumTrainable())
	return wire.CreateModelResponse{ModelID: mod.id, Type: "create_model"}, nil
}

// cloneBase returns a copy of the base policy's weights to train, its
// adapters (if it has any) merged in.
func (s *Server) cloneBase() *native.Model {
	m := s.base.Lock()
	c := m.Clone()
	s.base.Unlock()
	if c.LoRA() != nil {
		c.MergeLoRA() // cannot fail: the clone has adapters
	}
	return c
}

// unloadModel queues the model's unload behind its queued requests: its
// weights and optimizer state are freed, requests sent later are 404, and
// saved weights stay.
func (s *Server) unloadModel(_ *http.Request, body []byte) (any, error) {
	var req wire.UnloadModelRequest
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	mod, err := s.getModel(req.ModelID)
	if err != nil {
		return nil, err
	}
	resp, err := s.submit(mod, "unload_model", nil, req, 0, nil, func(context.Context, *model) (any, error) {
		return wire.UnloadModelResponse{ModelID: mod.id, Type: "unload_model"}, nil
	}, nil)
	if err != nil {
		return nil, err
	}
	id := mod.id
	resp.ModelID = &id
	return resp, nil
}

func (s *Server) getInfo(_ *http.Request, body []byte) (any, error) {
	var req wire.GetInfoRequest
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	mod, err := s.getModel(req.ModelID)
	if err != nil {
		return nil, err
	}
	name := s.model
	isLoRA, rank := mod.cfg.Rank > 0, mod.cfg.Rank
	return wire.GetInfoResponse{
		ModelID:    mod.id,
		ModelData:  wire.ModelData{ModelName: &name},
		IsLoRA:     &isLoRA,
		LoRARank:   &rank,
		ModelName:  &name,
		LoraConfig: mod.cfg.wire(),
		Type:       "get_info",
	}, nil
}
