package openaiapi

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentrl/agentrl/internal/httpapi"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/text/toolcall"
)

// Options configure a Server. The zero value serves with the defaults.
type Options struct {
	// Model is the served model name. Empty means the policy's
	// Info().Name, or "agentrl" when that is empty too.
	Model string
	// APIKey, when set, must be sent as "Authorization: Bearer KEY" on the
	// /v1 routes (as vLLM's --api-key).
	APIKey string
	// MaxRequestBytes caps a request body (default 1 MiB); larger bodies
	// get 413.
	MaxRequestBytes int64
	// MaxTokensCap, when positive, is the largest max_tokens a request may
	// ask for, and bounds the default when it asks for none (16 on
	// /v1/completions, the rest of the context in chat).
	MaxTokensCap int
	// MaxN is the largest n (default 128).
	MaxN int
	// MaxRequestTokens bounds the tokens one request has the model read
	// and write, and its reply carry: summed over its choices, the prompt
	// and max_tokens (default: the larger of 262,144 and 32 × the
	// context). A request over it is a 400 that names the parameter to
	// lower.
	MaxRequestTokens int
	// MaxRequestLogprobs bounds the log-probabilities one request's reply
	// carries, summed over its choices: every position reported with
	// logprobs, prompt_logprobs or top_logprobs counts 1 plus its
	// alternatives (default: the larger of 262,144 and the context × 21,
	// one sequence of the whole context with the most alternatives
	// allowed). Each costs a pass over the vocabulary and some 40 bytes
	// of JSON: without it, a request of under 1 MiB (340 prompts of 767
	// ids, echo, logprobs and prompt_logprobs 20) asked for a 496 MB
	// reply. A request over it is a 400 that names the parameter to
	// lower.
	MaxRequestLogprobs int
	// MaxAdapters is the most LoRA adapters loaded at once (default 4):
	// each is a copy of the base model's weights. Loading one more, under
	// a new name, is a 400 until one is unloaded; replacing one in place
	// (load_inplace) is not counted.
	MaxAdapters int
	// MaxBatch is the most sequences merged into one policy.Sample call
	// (default 256). A single request with more sequences runs alone.
	MaxBatch int
	// BatchWindow is how long a batch waits for sampling requests that
	// have arrived but are still being read and checked (default 3ms;
	// negative means not at all). A batch never waits when no other
	// request is on its way, so a lone client pays no delay.
	BatchWindow time.Duration
	// MaxConcurrentBatches is the number of policy.Sample calls in flight
	// at once (default 1: the embedded policy runs one call at a time, and
	// requests arriving meanwhile gather into the next, larger batch).
	MaxConcurrentBatches int
	// Logger receives request logs (Debug) and policy failures (Error).
	// Nil means slog.Default().
	Logger *slog.Logger
	// AdapterDir, when set, enables POST /v1/load_lora_adapter and POST
	// /v1/unload_lora_adapter (vLLM's --enable-lora with
	// VLLM_ALLOW_RUNTIME_LORA_UPDATING=True), confined to this directory:
	// a lora_path, absolute or relative to AdapterDir, must resolve
	// (symbolic links followed) to a directory inside it. Without it the
	// two routes are 404, as in vLLM without the variable. LoadAdapter is
	// then required (New panics without it).
	AdapterDir string
	// LoadAdapter builds the policy of a LoRA adapter: dir is a PEFT
	// adapter directory (it holds adapter_config.json), and the policy
	// must share the base policy's tokenizer and context, adapters change
	// only the weights. It is what AdapterDir and AddAdapter load with.
	LoadAdapter func(ctx context.Context, dir string) (policy.Policy, error)
	// ToolCallParser names the text/toolcall format chat replies' tool
	// calls are read in, and forced calls written in (vLLM's
	// --tool-call-parser): "hermes", "llama3_json" or "compact". Empty
	// means the policy's own (policy.ToolRenderer's ToolCallFormat, read
	// from its chat template), or "compact" for a template without tools.
	// New panics on an unknown name.
	ToolCallParser string
}

const (
	defaultMaxRequestBytes = 1 << 20
	defaultMaxN            = 128
	defaultMaxBatch        = 256
	defaultMaxAdapters     = 4
	defaultBatchWindow     = 3 * time.Millisecond
	// minRequestBudget is the floor of the default token and log-prob
	// budgets of a request, for models of a short context: room for 1024
	// sequences of 256 tokens.
	minRequestBudget = 1 << 18
	// maxSequences caps prompts × n in one request.
	maxSequences = 1024
	// wireNegInf is vLLM's stand-in for a log-prob of -Inf.
	wireNegInf = -9999.0
)

func (o *Options) setDefaults(context int) {
	if o.MaxRequestTokens <= 0 {
		o.MaxRequestTokens = max(minRequestBudget, 32*context)
	}
	if o.MaxRequestLogprobs <= 0 {
		o.MaxRequestLogprobs = max(minRequestBudget, context*(1+maxTopLogprobs))
	}
	if o.MaxAdapters <= 0 {
		o.MaxAdapters = defaultMaxAdapters
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = defaultMaxRequestBytes
	}
	if o.MaxN <= 0 {
		o.MaxN = defaultMaxN
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = defaultMaxBatch
	}
	if o.BatchWindow == 0 {
		o.BatchWindow = defaultBatchWindow
	}
	if o.MaxConcurrentBatches <= 0 {
		o.MaxConcurrentBatches = 1
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Server is an http.Handler that serves a policy with vLLM's
// OpenAI-compatible API. It is safe for concurrent use; Close stops its
// batcher.
type Server struct {
	p     policy.Policy
	opts  Options
	model string
	vocab vocabularyPolicy  // nil when the policy does not describe its vocabulary
	top   topLogprobsPolicy // nil when the policy does not report its most likely tokens
	log   *slog.Logger
	batch *batcher // the base model's; see adapters.go for the others
	mux   *http.ServeMux

	shared *batchShared
	base   *servedModel
	models modelSet

	prefixMu sync.Mutex
	prefix   []int // add_special_tokens ids of a text prompt, once known

	constrainCache
}

// vocabularyPolicy is implemented by policies that describe their
// vocabulary, such as model/local's (with the agentrl tokenizer or a
// Hugging Face one).
type vocabularyPolicy interface {
	// VocabSize is the number of token ids the model accepts.
	VocabSize() int
	// IsSpecialToken reports whether skip_special_tokens drops id.
	IsSpecialToken(id int) bool
	// TokenBytes returns the bytes of token id.
	TokenBytes(id int) ([]byte, error)
}

// New returns a Server for p. Close it to stop its batching goroutine.
func New(p policy.Policy, opts Options) *Server {
	opts.setDefaults(p.Info().MaxContext)
	s := &Server{p: p, opts: opts, model: opts.Model, log: opts.Logger}
	if s.model == "" {
		s.model = p.Info().Name
	}
	if s.model == "" {
		s.model = "agentrl"
	}
	if vp, ok := p.(vocabularyPolicy); ok {
		s.vocab = vp
	}
	if tp, ok := p.(topLogprobsPolicy); ok {
		s.top = tp
	}
	s.shared = newBatchShared(opts.MaxConcurrentBatches)
	s.batch = s.newBatcher(p)
	s.base = &servedModel{name: s.model, p: p, batch: s.batch, root: s.model}
	if opts.ToolCallParser != "" {
		if _, err := toolcall.New(opts.ToolCallParser); err != nil {
			panic("openaiapi: Options.ToolCallParser: " + err.Error())
		}
	}
	if opts.AdapterDir != "" && opts.LoadAdapter == nil {
		panic("openaiapi: Options.AdapterDir is set without Options.LoadAdapter")
	}
	s.routes()
	return s
}

// routes builds the router: each route's method and path, behind the
// checks of handle.
func (s *Server) routes() {
	s.mux = http.NewServeMux()
	s.handle(http.MethodGet, "/health", s.health)
	s.handle(http.MethodGet, "/v1/models", s.listModels)
	s.handle(http.MethodGet, "/v1/models/{id...}", s.retrieveModel)
	s.handle(http.MethodPost, "/v1/completions", s.respond(s.complete))
	s.handle(http.MethodPost, "/v1/chat/completions", s.respond(s.chatComplete))
	s.handle(http.MethodPost, "/tokenize", s.tokenize)
	s.handle(http.MethodPost, "/detokenize", s.detokenize)
	if s.opts.AdapterDir != "" {
		s.handle(http.MethodPost, "/v1/load_lora_adapter", s.loadLoRAAdapter)
		s.handle(http.MethodPost, "/v1/unload_lora_adapter", s.unloadLoRAAdapter)
	}
	// ServeMux's own 404 and 405 are plain text: answer them in the
	// OpenAI error envelope, as every other reply.
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "", fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
	})
}

// handle registers h for method (GET routes answer HEAD too) and path,
// behind the API key on /v1 paths, and a 405 for the path's other methods.
func (s *Server) handle(method, path string, h http.HandlerFunc) {
	keyed := strings.HasPrefix(path, "/v1/")
	s.mux.HandleFunc(method+" "+path, func(w http.ResponseWriter, r *http.Request) {
		if keyed && s.opts.APIKey != "" && !s.authorized(r) {
			writeError(w, http.StatusUnauthorized, "", "invalid or missing API key: send it as \"Authorization: Bearer KEY\"")
			return
		}
		h(w, r)
	})
	s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", method)
		writeError(w, http.StatusMethodNotAllowed, "", fmt.Sprintf("method %s not allowed on %s (use %s)", r.Method, r.URL.Path, method))
	})
}

func (s *Server) newBatcher(p policy.Policy) *batcher {
	return newBatcher(p, s.shared, s.opts.BatchWindow, s.opts.MaxBatch, s.opts.Logger)
}

// respond adapts a handler that returns its response body or an error. A
// handler that streams its reply (stream.go) writes it on the eventStream
// it is given, and only its error, if any, is left to respond.
func (s *Server) respond(f func(http.ResponseWriter, *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		es := &eventStream{ResponseWriter: w}
		resp, err := f(es, r)
		switch {
		case es.open:
			if err != nil {
				s.streamError(es, r, err)
			}
		case err != nil:
			s.fail(w, r, err)
		default:
			writeJSON(w, http.StatusOK, resp)
		}
	}
}

// Model returns the served model name.
func (s *Server) Model() string { return s.model }

// Close stops the batcher: requests still waiting for a batch fail, calls
// in flight finish. Stop the HTTP server first (http.Server.Shutdown) so no
// request is cut short.
func (s *Server) Close() error {
	s.batch.close()
	s.closeAdapters()
	return nil
}

// Stats are counters of a Server's batchers.
type Stats struct {
	// SampleCalls is the number of policy.Sample calls made.
	SampleCalls int64
	// Sequences is the number of sequences sampled in them.
	Sequences int64
}

// Stats returns the batchers' counters, over every served model.
func (s *Server) Stats() Stats {
	return Stats{SampleCalls: s.batch.calls.Load(), Sequences: s.batch.seqs.Load()}
}

// statusWriter records the status of a response, for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	start := time.Now()
	w := &statusWriter{ResponseWriter: rw}
	defer func() {
		s.log.Debug("request", "method", r.Method, "path", r.URL.Path, "status", w.status,
			"duration", time.Since(start), "remote", r.RemoteAddr)
	}()
	// A request id, the client's own when it sent one, as vLLM's
	// --enable-request-id-headers (the OpenAI clients report it).
	id := r.Header.Get("X-Request-Id")
	if id == "" {
		id = httpapi.NewID("req-")
	}
	w.Header().Set("X-Request-Id", id)
	s.mux.ServeHTTP(w, r)
}

func (s *Server) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(s.opts.APIKey)) == 1
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }

func (s *Server) maxModelLen() int { return s.p.Info().MaxContext }

// apiError is a failed request: its status and OpenAI-style error body.
type apiError struct {
	status  int
	param   string
	message string
}

func (e *apiError) Error() string { return e.message }

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, param: param, message: fmt.Sprintf(format, args...)}
}

// fail writes err: an *apiError as itself, a context error as 499-like
// silence, anything else as a 500.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, param, message := s.failure(r, err)
	writeError(w, status, param, message)
}

// failure returns the status, param and message that report err (see
// fail), and logs it.
func (s *Server) failure(r *http.Request, err error) (status int, param, message string) {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae.status, ae.param, ae.message
	case r.Context().Err() != nil:
		// The client is gone; nobody reads the reply.
		s.log.Debug("request cancelled", "path", r.URL.Path, "err", err)
		return http.StatusServiceUnavailable, "", "request cancelled: " + err.Error()
	default:
		s.log.Error("policy failure", "path", r.URL.Path, "err", err)
		return http.StatusInternalServerError, "", err.Error()
	}
}

func writeError(w http.ResponseWriter, status int, param, message string) {
	httpapi.WriteJSON(w, status, errorBody(status, param, message)) // strings and an int: it always encodes
}

// errorBody is the OpenAI-style error object.
func errorBody(status int, param, message string) map[string]any {
	typ := "invalid_request_error"
	switch {
	case status >= 500:
		typ = "server_error"
	case status == http.StatusNotFound:
		typ = "not_found_error"
	case status == http.StatusUnauthorized:
		typ = "authentication_error"
	}
	var p any
	if param != "" {
		p = param
	}
	return map[string]any{"error": map[string]any{"message": message, "type": typ, "param": p, "code": status}}
}

// writeJSON writes v, or a 500 in the OpenAI error envelope when v does
// not encode.
func writeJSON(w http.ResponseWriter, status int, v any) {
	if err := httpapi.WriteJSON(w, status, v); err != nil {
		writeError(w, http.StatusInternalServerError, "", "encoding the reply: "+err.Error())
	}
}

// decode reads the JSON body into v: unknown fields are ignored, wrong
// types, trailing data and oversized bodies are errors.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) error {
	data, err := httpapi.ReadBody(w, r, s.opts.MaxRequestBytes)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return &apiError{status: http.StatusRequestEntityTooLarge, message: fmt.Sprintf("request body over the limit of %d bytes", mb.Limit)}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return &apiError{status: http.StatusRequestTimeout, message: "the request body did not arrive in time"}
		}
		return badRequest("", "reading the request body: %v", err)
	}
	err = httpapi.DecodeJSON(data, v)
	var fe *fieldError
	var de *httpapi.DecodeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &fe):
		return badRequest(fe.field, "field %q: %s", fe.field, fe.msg)
	case errors.As(err, &de):
		// Fields of the embedded samplingFields are named as the client
		// sent them.
		de.Field = strings.TrimPrefix(de.Field, "samplingFields.")
		return badRequest(de.Field, "%s", de.Error())
	default:
		return badRequest("", "%v", err)
	}
}

// fieldError is a field-level decoding error raised by custom unmarshalers.
type fieldError struct{ field, msg string }

func (e *fieldError) Error() string { return e.field + ": " + e.msg }

// checkModel accepts the served name, a loaded adapter's or an empty one.
func (s *Server) checkModel(name string) error {
	if name == "" || name == s.model || s.models.has(name) {
		return nil
	}
	return unknownModel(name)
}

func unknownModel(name string) error {
	return &apiError{status: http.StatusNotFound, param: "model", message: fmt.Sprintf("The model `%s` does not exist.", name)}
}

// checkIDs checks token ids against the vocabulary when it is known.
func (s *Server) checkIDs(param string, ids []int) error {
	v := s.vocabSize()
	for _, id := range ids {
		if id < 0 || (v > 0 && id >= v) {
			if v > 0 {
				return badRequest(param, "token id %d is outside the vocabulary [0, %d)", id, v)
			}
			return badRequest(param, "token id %d is negative", id)
		}
	}
	return nil
}

func (s *Server) vocabSize() int {
	if s.vocab == nil {
		return 0
	}
	return s.vocab.VocabSize()
}

func (s *Server) isSpecial(id int) bool { return s.vocab != nil && s.vocab.IsSpecialToken(id) }

// textPrefixPolicy is implemented by policies that know the ids their
// tokenizer puts before a text it encodes with special tokens, such as
// model/local's.
type textPrefixPolicy interface {
	TextPrefix() []int
}

// textPrefix returns the ids add_special_tokens puts before a text prompt:
// the policy's TextPrefix, or else what the chat template renders for an
// empty conversation.
func (s *Server) textPrefix(ctx context.Context) ([]int, error) {
	s.prefixMu.Lock()
	defer s.prefixMu.Unlock()
	if tp, ok := s.p.(textPrefixPolicy); ok && s.prefix == nil {
		s.prefix = append([]int{}, tp.TextPrefix()...)
	}
	if s.prefix == nil {
		ids, err := s.p.RenderChat(ctx, []policy.Message{}, false)
		if err != nil {
			// Not cached: the failure may be this request's alone.
			return nil, fmt.Errorf("rendering the special tokens of a text prompt: %w", err)
		}
		s.prefix = append([]int{}, ids...)
	}
	return s.prefix, nil
}

// encodeText tokenizes a text prompt, with the special-token prefix when
// special is true.
func (s *Server) encodeText(ctx context.Context, text string, special bool) ([]int, error) {
	ids, err := s.p.Encode(ctx, text)
	if err != nil {
		return nil, badRequest("prompt", "tokenizing the prompt: %v", err)
	}
	if !special {
		return ids, nil
	}
	pre, err := s.textPrefix(ctx)
	if err != nil {
		return nil, err
	}
	return slices.Concat(pre, ids), nil
}

// tokenText returns the bytes of each token, for logprobs.
func (s *Server) tokenBytes(ctx context.Context, ids []int) ([][]byte, error) {
	out := make([][]byte, len(ids))
	for i, id := range ids {
		if s.vocab != nil {
			b, err := s.vocab.TokenBytes(id)
			if err != nil {
				return nil, err
			}
			out[i] = b
			continue
		}
		t, err := s.p.Decode(ctx, ids[i:i+1])
		if err != nil {
			return nil, err
		}
		out[i] = []byte(t)
	}
	return out, nil
}

// decodeText decodes generated ids into the reply text: special tokens
// dropped when skipSpecial, and the final stop token dropped unless
// includeStop.
func (s *Server) decodeText(ctx context.Context, ids []int, stopped, skipSpecial, includeStop bool) (string, error) {
	if stopped && !includeStop && len(ids) > 0 {
		ids = ids[:len(ids)-1]
	}
	if skipSpecial && s.vocab != nil {
		ids = slices.DeleteFunc(slices.Clone(ids), s.isSpecial)
	}
	if len(ids) == 0 {
		return "", nil
	}
	return s.p.Decode(ctx, ids)
}

// wireLogProb writes -Inf (and NaN) as vLLM's -9999.
func wireLogProb(v float64) float64 {
	if math.IsInf(v, -1) || math.IsNaN(v) || v < wireNegInf {
		return wireNegInf
	}
	return v
}

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}
