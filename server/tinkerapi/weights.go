package tinkerapi

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	wire "github.com/agentrl/agentrl/client/tinker"
	"github.com/agentrl/agentrl/internal/atomicdir"
	"github.com/agentrl/agentrl/internal/httpapi"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/model/native"
)

// Kinds of saved weights, the middle part of their tinker:// path.
const (
	kindWeights = "weights"         // weights and optimizer state, for load_weights
	kindSampler = "sampler_weights" // weights alone, for asample
)

// metaFile describes a saved checkpoint, beside its weights.
const (
	metaFile   = "tinker.json"
	metaFormat = "agentrl-tinker/1"
)

// idPattern is what a model id and a checkpoint name may be (SkyRL's
// ID_PATTERN and ID_MAX_LENGTH): one safe path segment each.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,255}$`)

// tinkerPath is tinker://<model>/<kind>/<name>.
type tinkerPath struct{ model, kind, name string }

func (p tinkerPath) String() string { return "tinker://" + p.model + "/" + p.kind + "/" + p.name }

func (p tinkerPath) key() string { return p.kind + "/" + p.name }

// parsePath reads a tinker:// path of saved weights. A sampler path may
// also be tinker://<model>/<name> (SkyRL's server accepts both).
func parsePath(raw string, sampler bool) (tinkerPath, error) {
	want := "tinker://<model_id>/weights/<name>"
	if sampler {
		want = "tinker://<model_id>/sampler_weights/<name>"
	}
	rest, ok := strings.CutPrefix(raw, "tinker://")
	parts := strings.Split(rest, "/")
	var p tinkerPath
	switch {
	case !ok:
	case len(parts) == 3:
		p = tinkerPath{parts[0], parts[1], parts[2]}
	case len(parts) == 2 && sampler:
		p = tinkerPath{parts[0], kindSampler, parts[1]}
	}
	if !idPattern.MatchString(p.model) || !idPattern.MatchString(p.name) ||
		(sampler && p.kind != kindSampler) || (!sampler && p.kind != kindWeights) {
		return tinkerPath{}, badRequest("path %q must be %s (model ids and names of letters, digits, _ and -)", raw, want)
	}
	return p, nil
}

func (s *Server) dirOf(p tinkerPath) string {
	return filepath.Join(s.opts.Dir, p.model, p.kind, p.name)
}

// ckptMeta is a checkpoint's metaFile.
type ckptMeta struct {
	Format    string      `json:"format"`
	Kind      string      `json:"kind"`
	ModelID   string      `json:"model_id"`
	Name      string      `json:"name"`
	BaseModel string      `json:"base_model"`
	Config    modelConfig `json:"config"`
	// BaseSHA256 identifies the base weights that adapters (rank > 0)
	// apply to: SHA-256 of the float32 weights, little-endian, in the
	// native layout.
	BaseSHA256 string    `json:"base_sha256,omitempty"`
	Steps      int       `json:"steps"`     // optimizer steps taken
	Optimizer  bool      `json:"optimizer"` // the optimizer state is saved
	Created    time.Time `json:"created"`
}

// savedWeights parses a tinker://…/weights/… path and reads its
// checkpoint's description: 404 when there is none.
func (s *Server) savedWeights(raw string) (tinkerPath, ckptMeta, error) {
	p, err := parsePath(raw, false)
	if err != nil {
		return p, ckptMeta{}, err
	}
	meta, err := readMeta(s.dirOf(p))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return p, meta, notFound("Checkpoint not found: %s", p)
	case err != nil:
		return p, meta, badRequest("checkpoint %s: %v", p, err)
	}
	return p, meta, nil
}

// readMeta reads the metaFile of dir; a missing checkpoint is an error
// that wraps fs.ErrNotExist.
func readMeta(dir string) (ckptMeta, error) {
	raw, err := os.ReadFile(filepath.Join(dir, metaFile))
	if err != nil {
		return ckptMeta{}, err
	}
	var m ckptMeta
	if err := json.Unmarshal(raw, &m); err != nil {
		return ckptMeta{}, fmt.Errorf("%s: %w", metaFile, err)
	}
	if m.Format != metaFormat {
		return ckptMeta{}, fmt.Errorf("%s: format %q, want %q", metaFile, m.Format, metaFormat)
	}
	return m, nil
}

// writeCheckpoint saves m (and opt, when not nil) with meta into dir,
// atomically: the full weights as a native checkpoint, adapters as a PEFT
// adapter directory, the optimizer state beside either in the native
// layout.
func writeCheckpoint(dir string, m *native.Model, opt *native.AdamW, meta ckptMeta) error {
	data, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	return atomicdir.Write(dir, func(tmp string) error {
		if m.LoRA() == nil {
			return native.WriteCheckpoint(tmp, m, opt, map[string][]byte{metaFile: data})
		}
		if err := native.SavePEFT(tmp, m, meta.BaseModel); err != nil {
			return err
		}
		// SavePEFT leaves its files unsynced; the swap must find them on
		// disk.
		for _, name := range []string{native.PEFTConfigFile, native.PEFTWeightsFile} {
			if err := syncFile(filepath.Join(tmp, name)); err != nil {
				return err
			}
		}
		if opt != nil {
			if err := native.WriteOptimizer(tmp, m, opt); err != nil {
				return err
			}
		}
		return writeSynced(filepath.Join(tmp, metaFile), data)
	})
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeSynced writes a new file and fsyncs it.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// baseHash returns the SHA-256 of the base weights (adapters of the base
// policy merged), which adapters saved here are tied to.
func (s *Server) baseHash() string {
	s.baseOnce.Do(func() {
		m := s.base.Lock()
		if m.LoRA() == nil {
			s.baseSHA = hashParams(m.Params())
			s.base.Unlock()
			return
		}
		s.base.Unlock()
		s.baseSHA = hashParams(s.cloneBase().Params())
	})
	return s.baseSHA
}

func hashParams(params []float32) string {
	h := sha256.New()
	buf := make([]byte, 0, 1<<16)
	for _, x := range params {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
		if len(buf) == cap(buf) {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil))
}

// metaFor describes a checkpoint of mod about to be written.
func (s *Server) metaFor(mod *model, p tinkerPath, withOpt bool) ckptMeta {
	meta := ckptMeta{Format: metaFormat, Kind: p.kind, ModelID: mod.id, Name: p.name, BaseModel: s.model,
		Config: mod.cfg, Optimizer: withOpt && mod.opt != nil, Created: time.Now().UTC()}
	if mod.opt != nil {
		meta.Steps = mod.opt.Steps()
	}
	if mod.cfg.Rank > 0 {
		meta.BaseSHA256 = s.baseHash()
	}
	return meta
}

// diskUsage is the bytes of saved weights under the state directory,
// held to a quota (Options.DiskQuota).
type diskUsage struct {
	quota int64 // ≤ 0: none

	mu    sync.Mutex
	known bool  // used has been measured
	used  int64 // measured, plus what saves since wrote or are writing
}

// fullCheckpointBytes bounds the size of a checkpoint of n parameters
// with its optimizer state: float32 weights and AdamW's two moments, and
// the small files beside them.
func fullCheckpointBytes(n int64) int64 { return 12*n + 64<<10 }

// withinQuota runs write, which saves m (with its optimizer state when
// withOpt) as checkpoint p, if the state directory has room for it under
// the quota; a save that would pass the quota fails as a user error, and
// writes nothing.
func (s *Server) withinQuota(p tinkerPath, m *native.Model, withOpt bool, write func() error) error {
	d := &s.disk
	if d.quota <= 0 {
		if err := write(); err != nil {
			return fmt.Errorf("saving %s: %w", p, err)
		}
		return nil
	}
	n := int64(m.NumParams())
	if lo := m.LoRA(); lo != nil {
		n = int64(lo.NumParams())
	}
	est := 4*n + 64<<10
	if withOpt {
		est = fullCheckpointBytes(n)
	}
	d.mu.Lock()
	if !d.known {
		d.used, d.known = dirBytes(s.opts.Dir), true
	}
	if d.used+est > d.quota {
		used := d.used
		d.mu.Unlock()
		return userErrorf("saving %s (up to %d bytes) would pass the quota of %d bytes of saved weights on this server, which holds %d: "+
			"remove old checkpoints from its state directory, or raise the quota (trainer serve -tinker-disk-quota)", p, est, d.quota, used)
	}
	d.used += est
	d.mu.Unlock()
	err := write()
	var got int64
	if err == nil {
		got = dirBytes(s.dirOf(p))
	}
	d.mu.Lock()
	d.used += got - est
	d.mu.Unlock()
	if err != nil {
		return fmt.Errorf("saving %s: %w", p, err)
	}
	return nil
}

// dirBytes returns the size of the regular files under dir.
func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if info, err := e.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// reserveName returns submit's reserve and the matching release for a
// new checkpoint p of mod: the name must be new, on disk and among the
// saves in flight (409 otherwise, as SkyRL's server).
func (s *Server) reserveName(mod *model, p tinkerPath) (reserve func() error, release func()) {
	reserve = func() error {
		if mod.saving[p.key()] != nil || exists(filepath.Join(s.dirOf(p), metaFile)) {
			return errorf(http.StatusConflict, "Checkpoint %q already exists for model %q", p.name, mod.id)
		}
		mod.saving[p.key()] = &struct{}{}
		return nil
	}
	release = func() {
		mod.mu.Lock()
		delete(mod.saving, p.key())
		mod.mu.Unlock()
	}
	return reserve, release
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// checkpointName is the name of a new checkpoint: the request's path, or
// a fresh one.
func checkpointName(path *string, fallback string) (string, error) {
	if path == nil || *path == "" {
		return fallback, nil
	}
	if !idPattern.MatchString(*path) {
		return "", badRequest("path %q must be a name of letters, digits, _ and - (at most 255)", *path)
	}
	return *path, nil
}

func (s *Server) saveWeights(_ *http.Request, body []byte) (any, error) {
	var req wire.SaveWeightsRequest
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	mod, err := s.getModel(req.ModelID)
	if err != nil {
		return nil, err
	}
	name, err := checkpointName(req.Path, httpapi.NewID("weights_"))
	if err != nil {
		return nil, err
	}
	p := tinkerPath{mod.id, kindWeights, name}
	reserve, release := s.reserveName(mod, p)
	seq := req.SeqID
	req.SeqID = nil
	return s.submit(mod, "save_weights", seq, req, 0, reserve, func(_ context.Context, mod *model) (any, error) {
		meta := s.metaFor(mod, p, true)
		var opt *native.AdamW
		if meta.Optimizer {
			opt = mod.opt
		}
		if err := s.withinQuota(p, mod.m, opt != nil, func() error { return writeCheckpoint(s.dirOf(p), mod.m, opt, meta) }); err != nil {
			return nil, err
		}
		return wire.SaveWeightsResponse{Path: p.String(), Type: "save_weights"}, nil
	}, release)
}

func (s *Server) saveWeightsForSampler(_ *http.Request, body []byte) (any, error) {
	var req wire.SaveWeightsForSamplerRequest
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	mod, err := s.getModel(req.ModelID)
	if err != nil {
		return nil, err
	}
	fallback := httpapi.NewID("sampler_")
	if req.SamplingSessionSeqID != nil && req.SeqID != nil {
		fallback = fmt.Sprintf("ss%d_seq%d", *req.SamplingSessionSeqID, *req.SeqID) // SkyRL's name
	}
	name, err := checkpointName(req.Path, fallback)
	if err != nil {
		return nil, err
	}
	p := tinkerPath{mod.id, kindSampler, name}
	reserve, release := s.reserveName(mod, p)
	withSession := req.SamplingSessionSeqID != nil
	seq := req.SeqID
	req.SeqID = nil
	return s.submit(mod, "save_weights_for_sampler", seq, req, 0, reserve, func(_ context.Context, mod *model) (any, error) {
		snap := mod.m.Clone()
		if err := s.withinQuota(p, snap, false, func() error { return writeCheckpoint(s.dirOf(p), snap, nil, s.metaFor(mod, p, false)) }); err != nil {
			return nil, err
		}
		pol, err := local.NewWithCodec(p.String(), snap, s.base.Codec())
		if err != nil {
			return nil, err
		}
		s.samplers.put(p.String(), pol)
		resp := wire.SaveWeightsForSamplerResponse{Path: p.String(), Type: "save_weights_for_sampler"}
		if withSession {
			ss := &samplingSession{id: httpapi.NewID("sampling_"), created: time.Now(), session: mod.session, modelPath: p.String()}
			s.addSampling(ss)
			resp.SamplingSessionID = &ss.id
		}
		return resp, nil
	}, release)
}

func (s *Server) loadWeights(_ *http.Request, body []byte) (any, error) {
	req := wire.LoadWeightsRequest{Optimizer: true} // SkyRL's default
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	mod, err := s.getModel(req.ModelID)
	if err != nil {
		return nil, err
	}
	p, meta, err := s.savedWeights(req.Path)
	if err != nil {
		return nil, err
	}
	if err := checkFits(meta, mod.cfg); err != nil {
		return nil, badRequest("checkpoint %s: %v", p, err)
	}
	seq := req.SeqID
	req.SeqID = nil
	withOpt := req.Optimizer
	return s.submit(mod, "load_weights", seq, req, 0, nil, func(_ context.Context, mod *model) (any, error) {
		if err := s.runLoadWeights(mod, p, meta, withOpt); err != nil {
			return nil, err
		}
		path, id := p.String(), mod.id
		return wire.LoadWeightsResponse{Path: &path, ModelID: &id, Type: "load_weights"}, nil
	}, nil)
}

// checkFits reports a checkpoint that cannot load into a model set up as
// cfg: full weights and adapters do not mix, and adapters must have the
// model's rank, alpha and targets.
func checkFits(meta ckptMeta, cfg modelConfig) error {
	have, want := meta.Config, cfg
	switch {
	case have.Rank == 0 && want.Rank > 0:
		return fmt.Errorf("it holds every weight (rank 0) but the model trains LoRA adapters of rank %d: load it into a model created with lora_config.rank 0", want.Rank)
	case have.Rank > 0 && want.Rank == 0:
		return fmt.Errorf("it holds LoRA adapters of rank %d but the model trains every weight (rank 0): load it into a model created with lora_config.rank %d", have.Rank, have.Rank)
	case have.Rank != want.Rank:
		return fmt.Errorf("its adapters have rank %d, the model's rank %d", have.Rank, want.Rank)
	case have.Alpha != want.Alpha:
		return fmt.Errorf("its adapters have alpha %v, the model's alpha %v", have.Alpha, want.Alpha)
	case !slices.Equal(have.Targets, want.Targets):
		return fmt.Errorf("its adapters are on %v, the model's on %v", have.Targets, want.Targets)
	}
	return nil
}

// runLoadWeights replaces mod's weights (and, with withOpt, its optimizer
// state; otherwise the next optim_step starts a fresh optimizer) by the
// checkpoint's. Gradients accumulated so far are dropped.
func (s *Server) runLoadWeights(mod *model, p tinkerPath, meta ckptMeta, withOpt bool) error {
	dir := s.dirOf(p)
	if meta.Config.Rank == 0 {
		ck, err := native.LoadCheckpoint(dir)
		if err != nil {
			return userErrorf("loading %s: %v", p, err)
		}
		if got, want := ck.Model.Config(), mod.m.Config(); got != want {
			return userErrorf("%s is a model of another architecture (%+v) than this one (%+v)", p, got, want)
		}
		mod.m, mod.opt = ck.Model, nil
		if withOpt {
			mod.opt = ck.Optimizer
		}
		return nil
	}
	if meta.BaseSHA256 != s.baseHash() {
		return userErrorf("the adapters of %s were trained on other base weights than the %q served here", p, s.model)
	}
	m := s.cloneBase()
	if err := native.LoadPEFT(dir, m); err != nil {
		return userErrorf("loading %s: %v", p, err)
	}
	var opt *native.AdamW
	if withOpt {
		var err error
		opt, err = native.LoadOptimizer(dir, m)
		if errors.Is(err, fs.ErrNotExist) {
			opt, err = nil, nil // saved before the first optim_step
		}
		if err != nil {
			return userErrorf("loading the optimizer state of %s: %v", p, err)
		}
	}
	mod.m, mod.opt = m, opt
	return nil
}

func (s *Server) weightsInfo(_ *http.Request, body []byte) (any, error) {
	var req wire.WeightsInfoRequest
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	p, meta, err := s.savedWeights(req.TinkerPath)
	if err != nil {
		if s.beingSaved(p) {
			return nil, errorf(http.StatusTooEarly, "Checkpoint %s is still being saved", p)
		}
		return nil, err
	}
	lc := meta.Config.wire()
	return wire.WeightsInfoResponse{BaseModel: meta.BaseModel, IsLoRA: lc.Rank > 0, LoRARank: &lc.Rank,
		TrainUnembed: lc.TrainUnembed, TrainAttn: lc.TrainAttn, TrainMLP: lc.TrainMLP}, nil
}

// beingSaved reports whether checkpoint p of a model held here is being
// written.
func (s *Server) beingSaved(p tinkerPath) bool {
	s.mu.Lock()
	mod := s.models[p.model]
	s.mu.Unlock()
	if mod == nil {
		return false
	}
	mod.mu.Lock()
	defer mod.mu.Unlock()
	return mod.saving[p.key()] != nil
}

// checkSamplerPath checks that raw names sampler weights that exist: 404
// when they do not, 425 while they are being written (as SkyRL's server).
func (s *Server) checkSamplerPath(raw string) (tinkerPath, error) {
	p, err := parsePath(raw, true)
	if err != nil {
		return p, err
	}
	if s.samplers.has(p.String()) || exists(filepath.Join(s.dirOf(p), metaFile)) {
		return p, nil
	}
	if s.beingSaved(p) {
		return p, errorf(http.StatusTooEarly, "Checkpoint %s is still being saved", p)
	}
	return p, notFound("Checkpoint not found: %s", p)
}

// samplerPolicy returns the policy that samples the sampler weights p:
// from memory, or read from the state directory.
func (s *Server) samplerPolicy(p tinkerPath) (*local.Policy, error) {
	key := p.String()
	if pol := s.samplers.get(key); pol != nil {
		return pol, nil
	}
	dir := s.dirOf(p)
	meta, err := readMeta(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, userErrorf("Checkpoint not found: %s", p)
	}
	if err != nil {
		return nil, userErrorf("checkpoint %s: %v", p, err)
	}
	var m *native.Model
	if meta.Config.Rank == 0 {
		ck, err := native.LoadCheckpoint(dir)
		if err != nil {
			return nil, userErrorf("loading %s: %v", p, err)
		}
		if got := ck.Model.Config(); got != s.baseCfg {
			return nil, userErrorf("%s is a model of another architecture (%+v) than the %q served here (%+v)", p, got, s.model, s.baseCfg)
		}
		m = ck.Model
	} else {
		if meta.BaseSHA256 != s.baseHash() {
			return nil, userErrorf("the adapters of %s were trained on other base weights than the %q served here", p, s.model)
		}
		m = s.cloneBase()
		if err := native.LoadPEFT(dir, m); err != nil {
			return nil, userErrorf("loading %s: %v", p, err)
		}
	}
	pol, err := local.NewWithCodec(key, m, s.base.Codec())
	if err != nil {
		return nil, err
	}
	s.samplers.put(key, pol)
	return pol, nil
}

// samplerCache keeps the most recently used sampler policies.
type samplerCache struct {
	mu    sync.Mutex
	limit int
	order list.List // of *samplerEntry, most recent first
	byKey map[string]*list.Element
}

type samplerEntry struct {
	key string
	pol *local.Policy
}

func (c *samplerCache) get(key string) *local.Policy {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[key]
	if !ok {
		return nil
	}
	c.order.MoveToFront(e)
	return e.Value.(*samplerEntry).pol
}

func (c *samplerCache) has(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.byKey[key]
	return ok
}

func (c *samplerCache) put(key string, pol *local.Policy) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil {
		c.byKey = map[string]*list.Element{}
	}
	if e, ok := c.byKey[key]; ok {
		e.Value.(*samplerEntry).pol = pol
		c.order.MoveToFront(e)
		return
	}
	c.byKey[key] = c.order.PushFront(&samplerEntry{key, pol})
	for c.order.Len() > c.limit {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*samplerEntry).key)
	}
}
