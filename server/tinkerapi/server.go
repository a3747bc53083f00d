package tinkerapi

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	wire "github.com/agentrl/agentrl/client/tinker"
	"github.com/agentrl/agentrl/internal/httpapi"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/model/native"
)

// Options configure a Server. Dir is required; every other zero field
// takes its default.
type Options struct {
	// Model is the served base model name, the base_model that
	// create_model and asample accept. Empty means the policy's
	// Info().Name, or "agentrl" when that is empty too.
	Model string
	// Dir is the state directory: saved weights live under
	// Dir/<model_id>/weights/<name> and Dir/<model_id>/sampler_weights/<name>,
	// so that another server on the same directory loads them.
	Dir string
	// APIKey, when set, must be sent on every route but healthz, as the
	// SDK's "X-API-Key: KEY" or as "Authorization: Bearer KEY".
	APIKey string
	// MaxRequestBytes caps a request body (default 64 MiB); larger bodies
	// get 413. Each route is held to less where it can take less: a
	// forward or forward_backward body to what MaxRequestTokens tokens
	// need (128 bytes a token: its id and four float64 inputs), an
	// asample body to what a prompt of the model's context needs, every
	// other body to 1 MiB.
	MaxRequestBytes int64
	// MaxData is the most data in one forward or forward_backward
	// (default 1024, the SDK's chunk size).
	MaxData int
	// MaxRequestTokens is the most tokens, summed over its data, of one
	// forward or forward_backward request (default 16 × the larger of
	// MaxForwardTokens and the model's context). The SDK splits a batch
	// into requests of at most 5 MB; a client that does not must keep
	// its batches within this.
	MaxRequestTokens int
	// MaxSamples is the largest num_samples (default 128).
	MaxSamples int
	// MaxTopKPromptLogprobs is the largest topk_prompt_logprobs (default
	// 20, vLLM's max_logprobs).
	MaxTopKPromptLogprobs int
	// MaxForwardTokens is the most tokens packed into one forward pass of
	// the model (default 8192): the data of a call are split into passes
	// of at most this many tokens (a datum longer than that runs alone),
	// their gradients summed.
	MaxForwardTokens int
	// MaxSampleBatch is the most sequences merged into one sampling call
	// (default 256); a single request with more runs alone.
	MaxSampleBatch int
	// MaxQueuedSamples is the most sequences (num_samples summed over
	// asample requests) waiting for the sampler (default 8 ×
	// MaxSampleBatch); more get 429 until the queue drains.
	MaxQueuedSamples int
	// MaxModels is the most models (create_model) held at once (default
	// 4): each is a copy of the base weights, with its gradient and
	// optimizer state. More get 429; unload_model frees one.
	MaxModels int
	// MaxQueuedRequests is the most requests of one model queued for its
	// worker (default 64); more get 429.
	MaxQueuedRequests int
	// MaxFutures is the most results the server holds, pending or not
	// yet retrieved (default 4096), and MaxFutureBytes their size
	// (default 256 MiB), a pending request counted at the most its result
	// can take. A request that would pass either gets 429 until clients
	// retrieve theirs; a retrieved result is freed 30 s later (sooner
	// when the limits are reached).
	MaxFutures     int
	MaxFutureBytes int64
	// DiskQuota, when positive, bounds the bytes of saved weights in Dir
	// (those there at start included): a save that would pass it fails
	// as a user error. Zero means no quota (the in-process server of a
	// training run); `trainer serve` sets DefaultDiskQuota.
	DiskQuota int64
	// RetrieveWait is how long retrieve_future holds a request whose
	// result is not ready before answering 408 (default 300 s, as SkyRL's
	// server; the SDK then asks again).
	RetrieveWait time.Duration
	// SeqGapWait is how long the next training request of a model waits
	// for a missing lower seq_id (a request still on its way) before it
	// runs anyway (default 100 ms; negative means not at all).
	SeqGapWait time.Duration
	// FutureTTL is how long a finished request's result stays
	// retrievable when nobody retrieves it (default 10 minutes).
	FutureTTL time.Duration
	// SamplerCache is the number of sampler weights (snapshots and
	// checkpoints read back) kept in memory for asample (default 4); the
	// others are read from Dir again when asked for.
	SamplerCache int
	// Logger receives request logs (Debug), warnings and failures. Nil
	// means slog.Default().
	Logger *slog.Logger
	// JSONOnly makes the server speak only the JSON dialect of SDKs up to
	// 0.24.1, as it did before protobuf: protobuf and compressed bodies
	// get 415, results are JSON whatever the client accepts, and
	// client/config names no protobuf flag. For tests of clients against
	// such servers.
	JSONOnly bool
	// CompressForward has client/config ask clients to send protobuf
	// forward bodies zstd-compressed (proto_compress_fwdbwd), as hosted
	// Tinker does; the server reads them compressed or not either way.
	CompressForward bool
}

const (
	defaultMaxRequestBytes = 64 << 20
	defaultMaxData         = 1024
	defaultMaxSamples      = 128
	defaultMaxTopK         = 20
	defaultForwardTokens   = 8192
	defaultSampleBatch     = 256
	defaultMaxModels       = 4
	defaultQueuedRequests  = 64
	defaultMaxFutures      = 4096
	defaultFutureBytes     = 256 << 20
	defaultRetrieveWait    = 300 * time.Second
	defaultSeqGapWait      = 100 * time.Millisecond
	defaultFutureTTL       = 10 * time.Minute
	defaultSamplerCache    = 4
)

// Bounds of the server's small state, which clients create without limit
// otherwise: past them, the oldest entry is forgotten (a session by its
// last heartbeat, a sampling session by its creation, a model's seq_id
// records in the order they came).
const (
	maxSessions         = 1024
	maxSamplingSessions = 4096
	maxSeqRecords       = 4096
)

// Body limits (see Options.MaxRequestBytes).
const (
	smallBodyBytes = 1 << 20
	// bytesPerToken is the most JSON a token of a forward datum takes:
	// its id in model_input and target_tokens, and weights, advantages
	// and logprobs as float64 at most 24 characters each, separators
	// included, with room to spare.
	bytesPerToken = 128
	// largeBodySlots is the number of forward and forward_backward bodies
	// read and decoded at once: decoding one takes several times its size
	// in memory, so more at once get 429.
	largeBodySlots = 2
)

func (o *Options) setDefaults(context int) {
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = defaultMaxRequestBytes
	}
	if o.MaxData <= 0 {
		o.MaxData = defaultMaxData
	}
	if o.MaxSamples <= 0 {
		o.MaxSamples = defaultMaxSamples
	}
	if o.MaxTopKPromptLogprobs <= 0 {
		o.MaxTopKPromptLogprobs = defaultMaxTopK
	}
	if o.MaxForwardTokens <= 0 {
		o.MaxForwardTokens = defaultForwardTokens
	}
	if o.MaxRequestTokens <= 0 {
		o.MaxRequestTokens = 16 * max(o.MaxForwardTokens, context)
	}
	if o.MaxSampleBatch <= 0 {
		o.MaxSampleBatch = defaultSampleBatch
	}
	if o.MaxQueuedSamples <= 0 {
		o.MaxQueuedSamples = 8 * o.MaxSampleBatch
	}
	if o.MaxModels <= 0 {
		o.MaxModels = defaultMaxModels
	}
	if o.MaxQueuedRequests <= 0 {
		o.MaxQueuedRequests = defaultQueuedRequests
	}
	if o.MaxFutures <= 0 {
		o.MaxFutures = defaultMaxFutures
	}
	if o.MaxFutureBytes <= 0 {
		o.MaxFutureBytes = defaultFutureBytes
	}
	if o.RetrieveWait <= 0 {
		o.RetrieveWait = defaultRetrieveWait
	}
	if o.SeqGapWait == 0 {
		o.SeqGapWait = defaultSeqGapWait
	}
	if o.FutureTTL <= 0 {
		o.FutureTTL = defaultFutureTTL
	}
	if o.SamplerCache <= 0 {
		o.SamplerCache = defaultSamplerCache
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// DefaultDiskQuota is the disk quota `trainer serve` gives a server of
// base: 32 checkpoints of its full weights with their optimizer state,
// and at least 1 GiB.
func DefaultDiskQuota(base *local.Policy) int64 {
	m := base.Lock()
	n := int64(m.NumParams())
	base.Unlock()
	return max(1<<30, 32*fullCheckpointBytes(n))
}

// Server is an http.Handler serving the Tinker API for one base policy. It
// is safe for concurrent use; Close stops its workers.
type Server struct {
	base  *local.Policy
	opts  Options
	model string
	log   *slog.Logger
	mux   *http.ServeMux

	ctx     context.Context // ends at Close: running requests stop
	cancel  context.CancelFunc
	closing chan struct{}
	once    sync.Once
	wg      sync.WaitGroup

	mu        sync.Mutex
	sessions  map[string]*session
	samplings map[string]*samplingSession
	models    map[string]*model
	futures   map[string]*future
	// futureBytes is the futures' size: a finished one's result, a
	// pending one's reservation.
	futureBytes int64

	sampleMu   sync.Mutex
	sampleQ    []*sampleJob
	sampleSeqs int // sequences in sampleQ
	sampleWake chan struct{}
	samplers   samplerCache

	largeBodies chan struct{} // see largeBodySlots
	disk        diskUsage

	baseCfg     native.Config // the base model's architecture
	unembedOnce sync.Once
	baseOnce    sync.Once
	baseSHA     string // see baseHash
}

// New returns a Server for the base policy, keeping its state in
// opts.Dir (created if needed). Close it to stop its workers.
func New(base *local.Policy, opts Options) (*Server, error) {
	if base == nil {
		return nil, errors.New("tinkerapi: no base policy")
	}
	if opts.Dir == "" {
		return nil, errors.New("tinkerapi: Options.Dir (the state directory) is required")
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("tinkerapi: state directory: %w", err)
	}
	opts.setDefaults(base.Info().MaxContext)
	s := &Server{
		base: base, opts: opts, model: opts.Model, log: opts.Logger,
		closing:     make(chan struct{}),
		sessions:    map[string]*session{},
		samplings:   map[string]*samplingSession{},
		models:      map[string]*model{},
		futures:     map[string]*future{},
		sampleWake:  make(chan struct{}, 1),
		samplers:    samplerCache{limit: opts.SamplerCache},
		largeBodies: make(chan struct{}, largeBodySlots),
		disk:        diskUsage{quota: opts.DiskQuota},
	}
	if s.model == "" {
		s.model = base.Info().Name
	}
	if s.model == "" {
		s.model = "agentrl"
	}
	m := base.Lock()
	s.baseCfg = m.Config()
	base.Unlock()
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.routes()
	s.wg.Add(2)
	go s.runSampler()
	go s.sweeper()
	return s, nil
}

// Model returns the served base model name.
func (s *Server) Model() string { return s.model }

// Dir returns the state directory.
func (s *Server) Dir() string { return s.opts.Dir }

// Close stops the server: held retrieve_future calls answer 503, requests
// still queued fail, running ones are cancelled, and Close waits for the
// workers to stop. Weights already saved stay in the state directory. It
// is safe to call more than once.
func (s *Server) Close() error {
	s.once.Do(func() {
		close(s.closing)
		s.cancel()
	})
	s.wg.Wait()
	return nil
}

func (s *Server) closed() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// httpError is a request refused before it is queued: its HTTP status and
// detail.
type httpError struct {
	status int
	detail string
}

func (e *httpError) Error() string { return e.detail }

func errorf(status int, format string, args ...any) *httpError {
	return &httpError{status: status, detail: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *httpError {
	return errorf(http.StatusBadRequest, format, args...)
}

func notFound(format string, args ...any) *httpError {
	return errorf(http.StatusNotFound, format, args...)
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

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// routes builds the router: each route's method and path under /api/v1,
// behind the checks of handle.
func (s *Server) routes() {
	s.mux = http.NewServeMux()
	s.handle(http.MethodGet, "healthz", s.healthz)
	s.handle(http.MethodGet, "get_server_capabilities", s.capabilities)
	s.handle(http.MethodPost, "client/config", s.clientConfig)
	s.handle(http.MethodPost, "client/dynamic_config", s.clientDynamicConfig)
	s.handle(http.MethodPost, "telemetry", s.telemetry)
	small := s.respond(smallBodyBytes, false)
	s.handle(http.MethodPost, "create_session", small(s.createSession))
	s.handle(http.MethodPost, "session_heartbeat", small(s.heartbeat))
	s.handle(http.MethodPost, "create_sampling_session", small(s.createSamplingSession))
	s.handle(http.MethodGet, "samplers/{id}", s.getSampler)
	s.handle(http.MethodPost, "create_model", small(s.createModel))
	s.handle(http.MethodPost, "unload_model", small(s.unloadModel))
	s.handle(http.MethodPost, "get_info", small(s.getInfo))
	large := s.respond(bytesPerToken*int64(s.opts.MaxRequestTokens)+smallBodyBytes, true)
	s.handle(http.MethodPost, "forward", large(s.forward))
	s.handle(http.MethodPost, "forward_backward", large(s.forwardBackward))
	s.handle(http.MethodPost, "optim_step", small(s.optimStep))
	s.handle(http.MethodPost, "save_weights", small(s.saveWeights))
	s.handle(http.MethodPost, "save_weights_for_sampler", small(s.saveWeightsForSampler))
	s.handle(http.MethodPost, "load_weights", small(s.loadWeights))
	s.handle(http.MethodPost, "weights_info", small(s.weightsInfo))
	// A prompt of the whole context, as ids of up to 7 characters, and
	// room for the sampling parameters and stop strings.
	s.handle(http.MethodPost, "asample", s.respond(8*int64(s.base.Info().MaxContext)+smallBodyBytes, false)(s.asample))
	s.handle(http.MethodPost, "retrieve_future", s.retrieveFuture)
	// ServeMux's own 404 and 405 are plain text: answer them as FastAPI
	// does, in the {"detail": ...} body the SDK reads.
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, notFound("Not Found: no route %s %s", r.Method, r.URL.Path))
	})
}

// handle registers h for method (GET routes answer HEAD too) and the path
// /api/v1/route behind the checks every route shares, and a 405 for the
// path's other methods.
func (s *Server) handle(method, route string, h http.HandlerFunc) {
	path := wire.APIPrefix + "/" + route
	keyed := route != "healthz" // health probes carry no key
	s.mux.HandleFunc(method+" "+path, func(w http.ResponseWriter, r *http.Request) {
		if keyed && s.opts.APIKey != "" && !s.authorized(r) {
			writeError(w, errorf(http.StatusUnauthorized, `invalid or missing API key: send it as "X-API-Key: KEY" or "Authorization: Bearer KEY"`))
			return
		}
		if s.closed() {
			writeError(w, errorf(http.StatusServiceUnavailable, "the server is shutting down"))
			return
		}
		if method == http.MethodPost {
			if err := checkContentType(r, !s.opts.JSONOnly && (route == "forward" || route == "forward_backward")); err != nil {
				writeError(w, err)
				return
			}
		}
		h(w, r)
	})
	s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", method)
		writeError(w, errorf(http.StatusMethodNotAllowed, "Method Not Allowed: %s %s (use %s)", r.Method, r.URL.Path, method))
	})
}

// ServeHTTP implements http.Handler for the routes under /api/v1.
func (s *Server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	start := time.Now()
	w := &statusWriter{ResponseWriter: rw}
	defer func() {
		s.log.Debug("tinker request", "method", r.Method, "path", r.URL.Path, "status", w.status,
			"duration", time.Since(start), "remote", r.RemoteAddr)
	}()
	s.mux.ServeHTTP(w, r)
}

// checkContentType accepts JSON bodies, and with proto (the forward
// routes) protobuf bodies too (application/x-protobuf, as SDK 0.25.0
// sends forward_backward), plain or zstd-compressed.
func checkContentType(r *http.Request, proto bool) *httpError {
	mt := ""
	if ct := r.Header.Get("Content-Type"); ct != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(ct); err != nil {
			mt = ct
		}
	}
	switch {
	case mt == "" || mt == wire.ContentTypeJSON:
	case mt == wire.ContentTypeProto && proto:
	case mt == wire.ContentTypeProto:
		return errorf(http.StatusUnsupportedMediaType,
			"Content-Type %q is not supported on %s: this server reads JSON bodies there (application/json); protobuf bodies only on forward_backward (and forward)%s", mt, r.URL.Path, jsonOnlyNote(proto))
	default:
		return errorf(http.StatusUnsupportedMediaType, "Content-Type %q is not supported: send JSON (application/json)", mt)
	}
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); {
	case enc == "" || enc == "identity":
	case enc == "zstd" && mt == wire.ContentTypeProto:
	default:
		return errorf(http.StatusUnsupportedMediaType, "Content-Encoding %q is not supported: only protobuf forward bodies may come zstd-compressed", enc)
	}
	return nil
}

func jsonOnlyNote(proto bool) string {
	if proto {
		return ""
	}
	return ", which this server does not read (it speaks the JSON dialect only)"
}

func (s *Server) authorized(r *http.Request) bool {
	key := r.Header.Get("X-API-Key")
	if key == "" {
		var ok bool
		if key, ok = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); !ok {
			return false
		}
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(key)), []byte(s.opts.APIKey)) == 1
}

// respond returns the adapter of handlers that return their reply or an
// error, reading bodies of at most limit bytes (and MaxRequestBytes).
// With large, at most largeBodySlots such bodies are read and decoded at
// once; more get 429.
func (s *Server) respond(limit int64, large bool) func(f func(r *http.Request, body []byte) (any, error)) http.HandlerFunc {
	limit = min(limit, s.opts.MaxRequestBytes)
	return func(f func(r *http.Request, body []byte) (any, error)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if large {
				select {
				case s.largeBodies <- struct{}{}:
				default:
					w.Header().Set("Retry-After", "1")
					writeError(w, errorf(http.StatusTooManyRequests, "%d forward requests are being read already: try again shortly", largeBodySlots))
					return
				}
			}
			body, herr := s.readBody(w, r, limit)
			var resp any
			var err error
			if herr == nil {
				resp, err = f(r, body)
			}
			if large {
				<-s.largeBodies
			}
			switch {
			case herr != nil:
				writeError(w, herr)
			case err != nil:
				s.fail(w, r, err)
			default:
				writeJSON(w, http.StatusOK, resp)
			}
		}
	}
}

// fail writes err: an *httpError as itself, anything else as a 500.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var he *httpError
	if !errors.As(err, &he) {
		s.log.Error("tinker request failed", "path", r.URL.Path, "err", err)
		he = errorf(http.StatusInternalServerError, "%v", err)
	}
	writeError(w, he)
}

// readBody reads a request body of at most limit bytes; a
// zstd-compressed one (which checkContentType admits only for protobuf
// forward bodies) is decompressed, to at most limit bytes too.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *httpError) {
	limit = min(limit, s.opts.MaxRequestBytes)
	if r.ContentLength > limit {
		// Refused before reading, and the connection closed after the
		// reply, as MaxBytesReader does.
		w.Header().Set("Connection", "close")
		return nil, errorf(http.StatusRequestEntityTooLarge, "request body of %d bytes over the limit of %d bytes for %s", r.ContentLength, limit, r.URL.Path)
	}
	data, err := httpapi.ReadBody(w, r, limit)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, errorf(http.StatusRequestEntityTooLarge, "request body over the limit of %d bytes for %s", mb.Limit, r.URL.Path)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, errorf(http.StatusRequestTimeout, "the request body did not arrive in time")
		}
		return nil, badRequest("reading the request body: %v", err)
	}
	if strings.EqualFold(strings.TrimSpace(r.Header.Get("Content-Encoding")), "zstd") {
		return decompressZstd(data, limit, r.URL.Path)
	}
	return data, nil
}

// decode reads a JSON object into v, which may hold defaults: fields the
// body leaves out keep them. Unknown fields are ignored (the SDK sends
// some this server does not use); wrong types and trailing data are
// errors.
func decode(data []byte, v any) error {
	if err := httpapi.DecodeJSON(data, v); err != nil {
		return badRequest("%v", err)
	}
	return nil
}

func writeError(w http.ResponseWriter, e *httpError) {
	httpapi.WriteJSON(w, e.status, wire.ErrorBody{Detail: e.detail}) // a string: it always encodes
}

// writeJSON writes v, or a 500 with its detail when v does not encode.
func writeJSON(w http.ResponseWriter, status int, v any) {
	if err := httpapi.WriteJSON(w, status, v); err != nil {
		writeError(w, errorf(http.StatusInternalServerError, "encoding the reply: %v", err))
	}
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, wire.HealthResponse{Status: "ok"})
}

func (s *Server) capabilities(w http.ResponseWriter, _ *http.Request) {
	ctx := s.base.Info().MaxContext
	writeJSON(w, http.StatusOK, wire.GetServerCapabilitiesResponse{
		SupportedModels: []wire.SupportedModel{{ModelName: s.model, MaxContextLength: &ctx}},
		Engine:          string(wire.EngineAgentrl),
	})
}

// clientConfig answers the SDK's first call: no JWT exchange, the chunks
// of a forward_backward sent in order, protobuf forward bodies (for SDKs
// 0.22.3 to 0.24.1, which ask; 0.25.0 always sends them), compressed when
// CompressForward, and httpx's own transport (the SDK then needs no
// pyqwest).
func (s *Server) clientConfig(w http.ResponseWriter, r *http.Request) {
	if _, err := s.readBody(w, r, smallBodyBytes); err != nil {
		writeError(w, err)
		return
	}
	no := false
	cfg := wire.ClientConfigResponse{FwdBwdMaxChunkLen: s.opts.MaxData, UsePyqwestTransport: &no}
	if !s.opts.JSONOnly {
		cfg.ProtoWriteFwdBwd, cfg.FwdViaFwdBwd, cfg.ProtoCompressFwdBwd = true, true, s.opts.CompressForward
	}
	writeJSON(w, http.StatusOK, cfg)
}

// clientDynamicConfig answers the flags the SDK refetches: none, every 5
// minutes.
func (s *Server) clientDynamicConfig(w http.ResponseWriter, r *http.Request) {
	if _, err := s.readBody(w, r, smallBodyBytes); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.ClientDynamicConfigResponse{RefreshIntervalSec: 300})
}

// telemetry accepts the SDK's telemetry and drops it: nothing leaves an
// offline server.
func (s *Server) telemetry(w http.ResponseWriter, r *http.Request) {
	if _, err := s.readBody(w, r, smallBodyBytes); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.TelemetryResponse{Status: "accepted"})
}

// session is a client's session (create_session).
type session struct {
	id        string
	created   time.Time
	heartbeat time.Time
}

// samplingSession names what asample samples: the base model or saved
// sampler weights.
type samplingSession struct {
	id        string
	created   time.Time
	session   string
	base      bool
	modelPath string // when !base
}

func (s *Server) createSession(_ *http.Request, body []byte) (any, error) {
	var req wire.CreateSessionRequest
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	now := time.Now()
	se := &session{id: httpapi.NewID("session_"), created: now, heartbeat: now}
	s.mu.Lock()
	if len(s.sessions) >= maxSessions {
		// The session heard from least recently: a client that still
		// heartbeats every 10 s is never it while others have stopped.
		var oldest *session
		for _, o := range s.sessions {
			if oldest == nil || o.heartbeat.Before(oldest.heartbeat) {
				oldest = o
			}
		}
		delete(s.sessions, oldest.id)
	}
	s.sessions[se.id] = se
	s.mu.Unlock()
	return wire.CreateSessionResponse{SessionID: se.id, Type: "create_session"}, nil
}

func (s *Server) heartbeat(_ *http.Request, body []byte) (any, error) {
	var req wire.SessionHeartbeatRequest
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.sessions[req.SessionID]
	if !ok {
		return nil, notFound("Session not found: %q", req.SessionID)
	}
	se.heartbeat = time.Now()
	return wire.SessionHeartbeatResponse{Type: "session_heartbeat"}, nil
}

func (s *Server) hasSession(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.sessions[id]
	return ok
}

func (s *Server) createSamplingSession(_ *http.Request, body []byte) (any, error) {
	var req wire.CreateSamplingSessionRequest
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	if !s.hasSession(req.SessionID) {
		return nil, notFound("Session not found: %q", req.SessionID)
	}
	if (req.BaseModel == nil) == (req.ModelPath == nil) {
		return nil, badRequest("Exactly one of base_model or model_path must be provided")
	}
	ss := &samplingSession{id: httpapi.NewID("sampling_"), created: time.Now(), session: req.SessionID}
	if req.BaseModel != nil {
		if err := s.checkBase(*req.BaseModel); err != nil {
			return nil, err
		}
		ss.base = true
	} else {
		tp, err := s.checkSamplerPath(*req.ModelPath)
		if err != nil {
			return nil, err
		}
		ss.modelPath = tp.String()
	}
	s.addSampling(ss)
	return wire.CreateSamplingSessionResponse{SamplingSessionID: ss.id, Type: "create_sampling_session"}, nil
}

// addSampling registers a sampling session, forgetting the oldest one
// past maxSamplingSessions (a training run makes one per version of its
// weights, and samples the newest).
func (s *Server) addSampling(ss *samplingSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.samplings) >= maxSamplingSessions {
		var oldest *samplingSession
		for _, o := range s.samplings {
			if oldest == nil || o.created.Before(oldest.created) {
				oldest = o
			}
		}
		delete(s.samplings, oldest.id)
	}
	s.samplings[ss.id] = ss
}

// getSampler serves GET samplers/{id}.
func (s *Server) getSampler(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	ss, ok := s.samplings[id]
	s.mu.Unlock()
	if !ok {
		writeError(w, notFound("Sampler not found: %q", id))
		return
	}
	resp := wire.GetSamplerResponse{SamplerID: ss.id, BaseModel: s.model}
	if !ss.base {
		p := ss.modelPath
		resp.ModelPath = &p
	}
	writeJSON(w, http.StatusOK, resp)
}

// checkBase accepts the served model's name.
func (s *Server) checkBase(name string) error {
	if name != s.model {
		return badRequest("base model %q is not served here: this server serves %q", name, s.model)
	}
	return nil
}
