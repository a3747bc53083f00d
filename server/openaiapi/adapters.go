package openaiapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentrl/agentrl/policy"
)

// This file holds the served models (the base policy and the LoRA adapters
// loaded over it), vLLM's /v1/load_lora_adapter and /v1/unload_lora_adapter,
// and the model cards of /v1/models.

// Files of a PEFT adapter directory (native.PEFTConfigFile and
// native.PEFTWeightsFile; this package does not depend on the model code).
const (
	peftConfigFile  = "adapter_config.json"
	peftWeightsFile = "adapter_model.safetensors"
)

// servedModel is a model a request can name: the base policy or a LoRA
// adapter, each with its own batcher, so requests for different models are
// never merged into one policy.Sample call.
type servedModel struct {
	name   string
	p      policy.Policy
	batch  *batcher
	root   string // the card's root: the lora_path as given, for an adapter
	parent string // the base model's name for an adapter, "" for the base
	seq    int64  // listing order: adapters in the order they were first loaded

	// Guarded by modelSet.mu.
	refs int  // requests using the model
	gone bool // unloaded or replaced: its batcher stops when refs is 0
}

// modelSet holds the loaded adapters.
type modelSet struct {
	admin sync.Mutex // serialises loads and unloads

	mu     sync.Mutex
	byName map[string]*servedModel
	seq    int64
	closed bool
}

func (ms *modelSet) has(name string) bool {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	_, ok := ms.byName[name]
	return ok
}

// list returns the adapters in listing order.
func (ms *modelSet) list() []*servedModel {
	ms.mu.Lock()
	out := make([]*servedModel, 0, len(ms.byName))
	for _, m := range ms.byName {
		out = append(out, m)
	}
	ms.mu.Unlock()
	slices.SortFunc(out, func(a, b *servedModel) int { return int(a.seq - b.seq) })
	return out
}

// acquire returns the model the request field model names (the base model
// when it is empty) and holds it until release: an adapter unloaded
// meanwhile keeps serving the requests that hold it.
func (s *Server) acquire(name string) (*servedModel, error) {
	if name == "" || name == s.model {
		return s.base, nil
	}
	ms := &s.models
	ms.mu.Lock()
	defer ms.mu.Unlock()
	m, ok := ms.byName[name]
	if !ok {
		return nil, unknownModel(name)
	}
	m.refs++
	return m, nil
}

// release ends an acquire.
func (s *Server) release(m *servedModel) {
	if m == s.base {
		return
	}
	s.models.mu.Lock()
	m.refs--
	stop := m.gone && m.refs == 0
	s.models.mu.Unlock()
	if stop {
		m.batch.close()
	}
}

// retire marks an adapter that is no longer listed, and reports whether
// its batcher can stop now (no request holds it; otherwise the last
// release stops it). modelSet.mu is held.
func (m *servedModel) retire() (stop bool) {
	m.gone = true
	return m.refs == 0
}

// closeAdapters stops every adapter's batcher (Close).
func (s *Server) closeAdapters() {
	ms := &s.models
	ms.mu.Lock()
	ms.closed = true
	all := make([]*servedModel, 0, len(ms.byName))
	for _, m := range ms.byName {
		m.gone = true
		all = append(all, m)
	}
	clear(ms.byName)
	ms.mu.Unlock()
	for _, m := range all {
		m.batch.close()
	}
}

// Adapters returns the names of the loaded LoRA adapters, in the order
// /v1/models lists them.
func (s *Server) Adapters() []string {
	var names []string
	for _, m := range s.models.list() {
		names = append(names, m.name)
	}
	return names
}

// AddAdapter loads the LoRA adapter at path under name, as POST
// /v1/load_lora_adapter does but without confining path to
// Options.AdapterDir: it is for the operator (`trainer serve -lora`, vLLM's
// --lora-modules). path is a PEFT adapter directory, or a directory that
// holds one as adapter/ and no model of its own (the trainer's LoRA
// checkpoints). With replace, an adapter already loaded under name is
// replaced (vLLM's load_inplace); without, that is an error.
func (s *Server) AddAdapter(ctx context.Context, name, path string, replace bool) error {
	return s.addAdapter(ctx, name, path, replace, false)
}

// RemoveAdapter unloads the adapter name, as POST /v1/unload_lora_adapter.
// Requests already using it finish with it.
func (s *Server) RemoveAdapter(name string) error {
	if name == "" {
		return badRequest("lora_name", "'lora_name' needs to be provided to unload a LoRA adapter.")
	}
	ms := &s.models
	ms.admin.Lock()
	defer ms.admin.Unlock()
	ms.mu.Lock()
	m, ok := ms.byName[name]
	stop := false
	if ok {
		delete(ms.byName, name)
		stop = m.retire()
	}
	ms.mu.Unlock()
	if !ok {
		return &apiError{status: http.StatusNotFound, param: "lora_name", message: fmt.Sprintf("The lora adapter '%s' cannot be found.", name)}
	}
	if stop {
		m.batch.close()
	}
	s.log.Info("removed LoRA adapter", "name", name)
	return nil
}

// addAdapter loads an adapter; confined confines path to
// Options.AdapterDir.
func (s *Server) addAdapter(ctx context.Context, name, path string, replace, confined bool) error {
	if name == "" || path == "" {
		return badRequest("", "Both 'lora_name' and 'lora_path' must be provided.")
	}
	if name == s.model {
		return badRequest("lora_name", "The lora adapter name '%s' is the base model's name; choose another.", name)
	}
	if s.opts.LoadAdapter == nil {
		return errors.New("openaiapi: loading a LoRA adapter needs Options.LoadAdapter")
	}
	ms := &s.models
	ms.admin.Lock()
	defer ms.admin.Unlock()
	loaded := ms.has(name)
	if !replace && loaded {
		return badRequest("lora_name", "The lora adapter '%s' has already been loaded. If you want to load the adapter in place, set 'load_inplace' to True.", name)
	}
	// Checked before loading, which costs a copy of the model: loads are
	// serialised by admin, so the count cannot change meanwhile.
	if n := len(ms.list()); !loaded && n >= s.opts.MaxAdapters {
		return badRequest("lora_name", "This server holds %d LoRA adapters, its limit (trainer serve -max-loras): unload one (/v1/unload_lora_adapter) before loading '%s'.", n, name)
	}
	dir, err := s.adapterDir(path, confined)
	if err != nil {
		return err
	}
	p, err := s.opts.LoadAdapter(ctx, dir)
	if err != nil {
		return badRequest("lora_path", "Loading lora %s failed: %v", name, err)
	}
	if got, want := p.Info().MaxContext, s.maxModelLen(); got != want {
		return badRequest("lora_path", "Loading lora %s failed: its policy has a context of %d tokens, the base model %d", name, got, want)
	}
	m := &servedModel{name: name, p: p, batch: s.newBatcher(p), root: path, parent: s.model}

	ms.mu.Lock()
	if ms.closed {
		ms.mu.Unlock()
		m.batch.close()
		return errClosed
	}
	if ms.byName == nil {
		ms.byName = map[string]*servedModel{}
	}
	old := ms.byName[name]
	stopOld := false
	if old != nil {
		m.seq = old.seq // vLLM's dict keeps a replaced adapter's place
		stopOld = old.retire()
	} else {
		ms.seq++
		m.seq = ms.seq
	}
	ms.byName[name] = m
	ms.mu.Unlock()
	if stopOld {
		old.batch.close()
	}
	s.log.Info("loaded LoRA adapter", "name", name, "path", path, "replaced", old != nil)
	return nil
}

// adapterDir resolves path to the PEFT adapter directory it names: path
// itself when it holds adapter_config.json, or path/adapter when that does
// and path holds no model (config.json) of its own. Confined, path counts
// from Options.AdapterDir when relative, and the directory and its adapter
// files must resolve, symbolic links followed, inside Options.AdapterDir;
// every failure then is the same 400, which does not tell whether a path
// outside exists.
func (s *Server) adapterDir(path string, confined bool) (string, error) {
	given := path
	outside := badRequest("lora_path", "lora_path %q is not a directory inside this server's LoRA adapter directory", given)
	root := ""
	if confined {
		abs, err := filepath.Abs(s.opts.AdapterDir)
		if err == nil {
			root, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			s.log.Error("the LoRA adapter directory is unusable", "dir", s.opts.AdapterDir, "err", err)
			return "", &apiError{status: http.StatusInternalServerError, message: "this server's LoRA adapter directory is unusable"}
		}
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
	}
	// inside resolves p and checks it is inside the root (when confined).
	inside := func(p string) (string, bool) {
		if !confined {
			return p, true
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return "", false
		}
		rel, err := filepath.Rel(root, real)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			return "", false
		}
		return real, true
	}
	dir, ok := inside(path)
	if !ok {
		return "", outside
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		if confined {
			return "", outside
		}
		return "", badRequest("lora_path", "lora_path %q is not a directory", given)
	}
	// Every path probed below has a resolved directory inside the root as
	// its parent, so only its last element can be a link out, which
	// counts as an escape whether or not its target exists: no reply
	// depends on what lies outside.
	var escaped bool
	probe := func(p string) (real string, exists bool) {
		if _, err := os.Lstat(p); err != nil {
			return "", false
		}
		real, ok := inside(p)
		if !ok {
			escaped = true
			return "", false
		}
		return real, true
	}
	isRegular := func(p string) bool {
		real, ok := probe(p)
		return ok && isFile(real)
	}
	if !isRegular(filepath.Join(dir, peftConfigFile)) && !escaped {
		sub, ok := probe(filepath.Join(dir, "adapter"))
		switch {
		case escaped:
		case !ok || !isRegular(filepath.Join(sub, peftConfigFile)) || isRegular(filepath.Join(dir, "config.json")):
			if !escaped {
				return "", badRequest("lora_path", "lora_path %q holds no PEFT adapter (%s, or adapter/%s)", given, peftConfigFile, peftConfigFile)
			}
		default:
			dir = sub
		}
	}
	probe(filepath.Join(dir, peftWeightsFile)) // the loader reports it missing
	if escaped {
		return "", outside
	}
	return dir, nil
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// loadLoRARequest is the body of POST /v1/load_lora_adapter.
type loadLoRARequest struct {
	LoRAName    string `json:"lora_name"`
	LoRAPath    string `json:"lora_path"`
	LoadInplace bool   `json:"load_inplace"`
}

// unloadLoRARequest is the body of POST /v1/unload_lora_adapter; lora_int_id
// is accepted and ignored, as vLLM does.
type unloadLoRARequest struct {
	LoRAName  string `json:"lora_name"`
	LoRAIntID *int   `json:"lora_int_id"`
}

func (s *Server) loadLoRAAdapter(w http.ResponseWriter, r *http.Request) {
	var req loadLoRARequest
	if err := s.decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.addAdapter(r.Context(), req.LoRAName, req.LoRAPath, req.LoadInplace, true); err != nil {
		s.fail(w, r, err)
		return
	}
	writeText(w, http.StatusOK, fmt.Sprintf("Success: LoRA adapter '%s' added successfully.", req.LoRAName))
}

func (s *Server) unloadLoRAAdapter(w http.ResponseWriter, r *http.Request) {
	var req unloadLoRARequest
	if err := s.decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.RemoveAdapter(req.LoRAName); err != nil {
		s.fail(w, r, err)
		return
	}
	writeText(w, http.StatusOK, fmt.Sprintf("Success: LoRA adapter '%s' removed successfully.", req.LoRAName))
}

// writeText writes vLLM's plain-text success bodies.
func writeText(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	w.Write([]byte(text))
}

// modelPermission is vLLM's ModelPermission, with its defaults.
type modelPermission struct {
	ID                 string  `json:"id"`
	Object             string  `json:"object"`
	Created            int64   `json:"created"`
	AllowCreateEngine  bool    `json:"allow_create_engine"`
	AllowSampling      bool    `json:"allow_sampling"`
	AllowLogprobs      bool    `json:"allow_logprobs"`
	AllowSearchIndices bool    `json:"allow_search_indices"`
	AllowView          bool    `json:"allow_view"`
	AllowFineTuning    bool    `json:"allow_fine_tuning"`
	Organization       string  `json:"organization"`
	Group              *string `json:"group"`
	IsBlocking         bool    `json:"is_blocking"`
}

// modelCard is vLLM's ModelCard.
type modelCard struct {
	ID          string            `json:"id"`
	Object      string            `json:"object"`
	Created     int64             `json:"created"`
	OwnedBy     string            `json:"owned_by"`
	Root        *string           `json:"root"`
	Parent      *string           `json:"parent"`
	MaxModelLen *int              `json:"max_model_len"`
	Permission  []modelPermission `json:"permission"`
}

// card returns m's card as vLLM writes it: created now, one default
// permission, max_model_len for the base model only (vLLM leaves it null
// on adapters).
func (s *Server) card(m *servedModel, now int64) modelCard {
	var b [16]byte
	rand.Read(b[:])
	c := modelCard{
		ID: m.name, Object: "model", Created: now, OwnedBy: "vllm", Root: ptr(m.root),
		Permission: []modelPermission{{
			ID: "modelperm-" + hex.EncodeToString(b[:]), Object: "model_permission", Created: now,
			AllowSampling: true, AllowLogprobs: true, AllowView: true, Organization: "*",
		}},
	}
	if m.parent != "" {
		c.Parent = ptr(m.parent)
	} else {
		c.MaxModelLen = ptr(s.maxModelLen())
	}
	return c
}

// listModels serves GET /v1/models: the base model, then the adapters.
func (s *Server) listModels(w http.ResponseWriter, _ *http.Request) {
	now := time.Now().Unix()
	cards := []modelCard{s.card(s.base, now)}
	for _, m := range s.models.list() {
		cards = append(cards, s.card(m, now))
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": cards})
}

// retrieveModel serves GET /v1/models/{id} (the OpenAI API's retrieve,
// which vLLM lacks): one card, or a 404.
func (s *Server) retrieveModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	now := time.Now().Unix()
	if id == s.model {
		writeJSON(w, http.StatusOK, s.card(s.base, now))
		return
	}
	for _, m := range s.models.list() {
		if m.name == id {
			writeJSON(w, http.StatusOK, s.card(m, now))
			return
		}
	}
	s.fail(w, r, unknownModel(id))
}
