package tinker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// SDKVersion is sent as the sdk_version of create_session and
// client/config: the SDK release whose protocol this client speaks, with
// agentrl's local tag (PEP 440 and semver both read it as 0.25.0), so
// that a server resolving flags by version gives this client the ones
// of that release.
const SDKVersion = "0.25.0+agentrl"

// Wire dialects (Options.Wire).
const (
	// WireAuto sends forward and forward_backward as protobuf, as the SDK
	// does since 0.25.0, and falls back to JSON for the whole session when
	// a server refuses the first such body as unreadable (HTTP 415 or
	// 422, as servers that predate protobuf answer).
	WireAuto = "auto"
	// WireProto always sends protobuf.
	WireProto = "proto"
	// WireJSON speaks the JSON dialect of SDKs up to 0.24.1: JSON bodies
	// (forward on its own route) and JSON results only.
	WireJSON = "json"
)

const userAgent = "agentrl-tinker/1 (Go)"

// Options configure a Client.
type Options struct {
	// BaseURL is the server, e.g. "http://10.0.0.5:8000" or
	// "https://host/services/tinker-prod"; a trailing "/api/v1" is
	// accepted and removed.
	BaseURL string
	// APIKey, when set, is sent as the SDK sends it: the X-API-Key header
	// (or exchanged for a JWT first, when the server's client/config asks:
	// see auth.go).
	APIKey string
	// CredentialCmd is a shell command that prints a credential, the SDK's
	// $TINKER_CREDENTIAL_CMD: used when APIKey is empty, or when the
	// server asks for dynamic credentials.
	CredentialCmd string
	// Wire is the dialect of forward and forward_backward: WireAuto (the
	// default, also for ""), WireProto or WireJSON. Results of forward,
	// forward_backward and asample are asked for as protobuf or JSON
	// (Accept: application/x-protobuf, application/json) and read in
	// whichever the server sends, but with WireJSON as JSON only.
	Wire string
	// HTTPClient sends the requests. Nil means a client with a pooled
	// transport. Its Timeout should be 0: RequestTimeout and PollTimeout
	// bound each round trip instead.
	HTTPClient *http.Client
	// Logger receives retry warnings and heartbeat failures. Nil discards
	// them.
	Logger *slog.Logger
	// RequestTimeout bounds one HTTP round trip (default 60s); polls of
	// retrieve_future use PollTimeout.
	RequestTimeout time.Duration
	// PollTimeout bounds one retrieve_future round trip, which the server
	// holds until the result is ready or its own wait ends (SkyRL's is
	// 300 s); default 330s. A poll that reaches it is simply repeated.
	PollTimeout time.Duration
	// FutureTimeout is the most time Future.Wait waits for one result
	// (default 30 minutes); 0 keeps the default, < 0 means no limit.
	FutureTimeout time.Duration
	// MaxRetries is the number of retries of a retryable failure (default
	// 5); 0 keeps the default, < 0 disables retries.
	MaxRetries int
	// RetryBaseDelay is the backoff before the first retry (default
	// 500ms); it doubles at each further retry up to RetryMaxDelay
	// (default 10s). A server's Retry-After, up to 60 s, is honoured when
	// longer.
	RetryBaseDelay, RetryMaxDelay time.Duration
	// HeartbeatInterval is the period of session heartbeats (default
	// 10s, the SDK's); < 0 disables them.
	HeartbeatInterval time.Duration
	// Tags and UserMetadata describe the session (create_session).
	Tags         []string
	UserMetadata map[string]any
}

func (o *Options) setDefaults() {
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 60 * time.Second
	}
	if o.PollTimeout <= 0 {
		o.PollTimeout = 330 * time.Second
	}
	switch {
	case o.FutureTimeout == 0:
		o.FutureTimeout = 30 * time.Minute
	case o.FutureTimeout < 0:
		o.FutureTimeout = 0
	}
	switch {
	case o.MaxRetries == 0:
		o.MaxRetries = 5
	case o.MaxRetries < 0:
		o.MaxRetries = 0
	}
	if o.RetryBaseDelay <= 0 {
		o.RetryBaseDelay = 500 * time.Millisecond
	}
	if o.RetryMaxDelay <= 0 {
		o.RetryMaxDelay = 10 * time.Second
	}
	o.RetryMaxDelay = max(o.RetryMaxDelay, o.RetryBaseDelay)
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Client is a session with a Tinker API server. It is safe for concurrent
// use.
type Client struct {
	opts      Options
	base      string // scheme://host[:port][/prefix], no trailing slash
	http      *http.Client
	log       *slog.Logger
	sessionID string

	rngMu sync.Mutex
	rng   *rand.Rand // backoff jitter

	modelSeq atomic.Int64 // model_seq_id of the next create_model

	auth *authState
	// config is client/config's reply (the SDK's defaults when the server
	// has no such route); configKeys the flags it named; dynConfig
	// client/dynamic_config's.
	config     ClientConfigResponse
	configKeys []string
	dynConfig  ClientDynamicConfigResponse
	// dialect is the wire dialect in use for forward bodies: dialectProto,
	// dialectJSON, or dialectUnknown until the first one is accepted.
	dialect atomic.Int32

	closed    atomic.Bool
	closeOnce sync.Once
	// closing ends with Close: it stops the heartbeats and aborts the
	// round trips in flight.
	closing  context.Context
	shutdown context.CancelFunc
	beatDone chan struct{}
}

// NewClient checks that the server answers (GET healthz, retried like any
// idempotent call, so that NewClient can wait within ctx for a server that
// is starting), creates a session and starts its heartbeats.
func NewClient(ctx context.Context, opts Options) (*Client, error) {
	opts.setDefaults()
	base, err := normalizeBaseURL(opts.BaseURL)
	if err != nil {
		return nil, err
	}
	switch opts.Wire {
	case "", WireAuto, WireProto, WireJSON:
	default:
		return nil, fmt.Errorf("tinker: Options.Wire %q: want %q, %q or %q", opts.Wire, WireAuto, WireProto, WireJSON)
	}
	c := &Client{
		opts: opts,
		base: base,
		log:  opts.Logger,
		rng:  newJitter(),
		http: opts.HTTPClient,
	}
	c.auth = &authState{c: c, apiKey: opts.APIKey, cmd: opts.CredentialCmd}
	c.closing, c.shutdown = context.WithCancel(context.Background())
	if c.http == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns = 256
		tr.MaxIdleConnsPerHost = 128
		c.http = &http.Client{Transport: tr}
	}
	if err := c.connect(ctx); err != nil {
		c.shutdown()
		return nil, err
	}
	c.beatDone = make(chan struct{})
	if opts.HeartbeatInterval > 0 {
		go c.heartbeats(c.closing)
	} else {
		close(c.beatDone)
	}
	return c, nil
}

func (c *Client) connect(ctx context.Context) error {
	if c.opts.APIKey == "" && c.opts.CredentialCmd != "" {
		// The SDK's fallback: the command's credential as the key.
		cred, err := c.auth.credential(ctx, false)
		if err != nil {
			return err
		}
		c.auth.apiKey = cred
	}
	data, err := c.do(ctx, http.MethodGet, "healthz", nil)
	if err != nil {
		return err
	}
	var health HealthResponse
	if err := decode("healthz", data, &health); err != nil {
		return err
	}
	if health.Status != "ok" {
		return fmt.Errorf("tinker: healthz: status %q, want \"ok\"", health.Status)
	}
	if err := c.fetchConfig(ctx); err != nil {
		return err
	}
	switch {
	case c.opts.Wire == WireJSON:
		c.dialect.Store(dialectJSON)
	case c.opts.Wire == WireProto, c.config.ProtoWriteFwdBwd, c.config.ProtoCompressFwdBwd:
		c.dialect.Store(dialectProto)
	}
	return c.createSession(ctx)
}

// Wire dialects of forward bodies (Client.dialect).
const (
	dialectUnknown int32 = iota
	dialectProto
	dialectJSON
)

// fetchConfig asks for client/config, as the SDK does before anything
// else, sets up the credential it calls for, and asks for
// client/dynamic_config. A server without these routes (404, 405) gets
// the SDK's defaults.
func (c *Client) fetchConfig(ctx context.Context) error {
	if c.opts.APIKey != "" && !sdkAcceptsKey(c.opts.APIKey) {
		c.log.Warn("tinker: the API key does not start with \"tml-\" (nor is it a JWT): the Tinker SDK refuses such keys, and hosted Tinker will too")
	}
	cred := c.auth.apiKey
	body, _ := json.Marshal(ClientConfigRequest{SDKVersion: SDKVersion})
	c.config = ClientConfigResponse{ParallelFwdBwdChunks: true, FwdBwdMaxChunkLen: 1024}
	r, err := c.doCall(ctx, call{method: http.MethodPost, route: "client/config", body: body, key: &cred})
	switch {
	case isStatus(err, http.StatusNotFound), isStatus(err, http.StatusMethodNotAllowed):
		c.log.Debug("tinker: the server has no client/config; the SDK's defaults apply")
	case err != nil:
		return err
	default:
		if err := decode("client/config", r.data, &c.config); err != nil {
			return err
		}
		var keys map[string]json.RawMessage
		json.Unmarshal(r.data, &keys)
		c.configKeys = slices.Sorted(maps.Keys(keys))
	}
	if c.config.PJWTAuthEnabled {
		if err := c.auth.enableJWT(ctx, c.config.CredentialDefaultSource == "credential_cmd"); err != nil {
			return err
		}
	}
	c.dynConfig = ClientDynamicConfigResponse{RefreshIntervalSec: 300}
	r, err = c.doCall(ctx, call{method: http.MethodPost, route: "client/dynamic_config", body: body})
	switch {
	case isStatus(err, http.StatusNotFound), isStatus(err, http.StatusMethodNotAllowed):
	case err != nil:
		return err
	default:
		if err := decode("client/dynamic_config", r.data, &c.dynConfig); err != nil {
			return err
		}
	}
	return nil
}

// ServerConfig returns the server's client/config reply (the SDK's
// defaults for a server without the route) and the names of the flags
// it sent.
func (c *Client) ServerConfig() (ClientConfigResponse, []string) {
	return c.config, slices.Clone(c.configKeys)
}

// DynamicConfig returns the server's client/dynamic_config reply, read
// at connection (the SDK's defaults for a server without the route).
func (c *Client) DynamicConfig() ClientDynamicConfigResponse { return c.dynConfig }

// WireDialect returns the dialect forward bodies go in: WireProto or
// WireJSON, or WireAuto while the first has not been sent.
func (c *Client) WireDialect() string {
	switch c.dialect.Load() {
	case dialectProto:
		return WireProto
	case dialectJSON:
		return WireJSON
	}
	return WireAuto
}

// resultAccept is the Accept header of retrieve_future for results that
// may come as protobuf (forward, forward_backward, asample).
func (c *Client) resultAccept() string {
	if c.opts.Wire == WireJSON {
		return ContentTypeJSON
	}
	return ContentTypeProto + ", " + ContentTypeJSON
}

// newJitter returns the source of backoff jitter. A fixed seed: jitter
// only spreads retries, and reproducible delays make runs comparable.
func newJitter() *rand.Rand { return rand.New(rand.NewPCG(0x74696e6b, 0x6572)) }

func normalizeBaseURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("tinker: base URL %q: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("tinker: base URL %q: want http(s)://host[:port][/path]", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("tinker: base URL %q: must not have a query or fragment", raw)
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), APIPrefix)
	u.RawPath = ""
	return strings.TrimRight(u.String(), "/"), nil
}

func (c *Client) createSession(ctx context.Context) error {
	tags := c.opts.Tags
	if tags == nil {
		tags = []string{}
	}
	meta := c.opts.UserMetadata
	if meta == nil {
		meta = map[string]any{}
	}
	var resp CreateSessionResponse
	if err := c.postJSON(ctx, "create_session", CreateSessionRequest{
		Tags: tags, UserMetadata: meta, SDKVersion: SDKVersion, Type: "create_session",
	}, &resp); err != nil {
		return err
	}
	if resp.SessionID == "" {
		return malformed("create_session", "reply has no session_id")
	}
	for _, m := range []struct {
		msg   *string
		level slog.Level
	}{{resp.InfoMessage, slog.LevelInfo}, {resp.WarningMessage, slog.LevelWarn}, {resp.ErrorMessage, slog.LevelError}} {
		if m.msg != nil && *m.msg != "" {
			c.log.Log(ctx, m.level, "tinker: server message", "session_id", resp.SessionID, "message", *m.msg)
		}
	}
	c.sessionID = resp.SessionID
	return nil
}

// heartbeats keeps the session alive until ctx ends. Like the SDK's, a
// heartbeat is not retried: the next one follows soon.
func (c *Client) heartbeats(ctx context.Context) {
	defer close(c.beatDone)
	body, _ := json.Marshal(SessionHeartbeatRequest{SessionID: c.sessionID, Type: "session_heartbeat"})
	t := time.NewTicker(c.opts.HeartbeatInterval)
	defer t.Stop()
	reportedGone := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, err := c.exchange(ctx, call{method: http.MethodPost, route: "session_heartbeat", body: body}, "", min(c.opts.RequestTimeout, max(c.opts.HeartbeatInterval, time.Second)))
		switch {
		case err == nil, ctx.Err() != nil:
		case isStatus(err, http.StatusNotFound):
			if !reportedGone {
				reportedGone = true
				c.log.Error("tinker: the server does not know this session (restarted or expired?); its models and futures are likely gone", "session_id", c.sessionID, "err", err)
			}
		default:
			c.log.Warn("tinker: session heartbeat failed", "session_id", c.sessionID, "err", err)
		}
	}
}

func isStatus(err error, status int) bool {
	var aerr *APIError
	return errors.As(err, &aerr) && aerr.Status == status
}

// Close stops the heartbeats, aborts the round trips in flight and closes
// idle connections; calls in flight and later calls return ErrClosed. A
// training call aborted this way may or may not have reached the server.
// Close is idempotent and always returns nil.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.shutdown()
		<-c.beatDone
		c.http.CloseIdleConnections()
	})
	return nil
}

// SessionID returns the session's id.
func (c *Client) SessionID() string { return c.sessionID }

// Capabilities asks which base models the server serves (GET
// get_server_capabilities).
func (c *Client) Capabilities(ctx context.Context) (GetServerCapabilitiesResponse, error) {
	var resp GetServerCapabilitiesResponse
	data, err := c.do(ctx, http.MethodGet, "get_server_capabilities", nil)
	if err != nil {
		return resp, err
	}
	if err := decode("get_server_capabilities", data, &resp); err != nil {
		return resp, err
	}
	return resp, nil
}

// postJSON sends an idempotent request and decodes its reply.
func (c *Client) postJSON(ctx context.Context, route string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("tinker: %s: encoding request: %w", route, err)
	}
	data, err := c.do(ctx, http.MethodPost, route, body)
	if err != nil {
		return err
	}
	return decode(route, data, out)
}

// CreateModel creates a model to train on baseModel with LoRA adapters
// (create_model, then its future). Its model_seq_id comes from the
// session's counter, so a retried create_model is the same request.
func (c *Client) CreateModel(ctx context.Context, baseModel string, lora LoraConfig) (*TrainingModel, error) {
	if baseModel == "" {
		return nil, errors.New("tinker: CreateModel: empty base model")
	}
	if lora.Rank < 0 {
		return nil, fmt.Errorf("tinker: CreateModel: LoRA rank %d", lora.Rank)
	}
	seq := int(c.modelSeq.Add(1) - 1) // the SDK numbers models from 0
	body, err := json.Marshal(CreateModelRequest{
		SessionID:  c.sessionID,
		ModelSeqID: seq,
		BaseModel:  baseModel,
		LoraConfig: &lora,
		Type:       "create_model",
	})
	if err != nil {
		return nil, fmt.Errorf("tinker: create_model: encoding request: %w", err)
	}
	f, err := submit(ctx, c, "create_model", body, decodeCreateModel)
	if err != nil {
		return nil, err
	}
	resp, err := f.Wait(ctx)
	if err != nil {
		return nil, err
	}
	return newTrainingModel(c, resp.ModelID, baseModel, lora), nil
}

func decodeCreateModel(data []byte) (CreateModelResponse, error) {
	var r CreateModelResponse
	if err := decode("create_model", data, &r); err != nil {
		return r, err
	}
	if r.ModelID == "" {
		return r, malformed("create_model", "result has no model_id (body %s)", snippet(data))
	}
	return r, nil
}

// ResumeModel creates a model and loads the weights and optimizer state
// saved at statePath (a tinker://…/weights/… path from SaveWeights) as its
// first request, which is where servers permit load_weights.
func (c *Client) ResumeModel(ctx context.Context, baseModel string, lora LoraConfig, statePath string) (*TrainingModel, error) {
	if statePath == "" {
		return nil, errors.New("tinker: ResumeModel: empty state path")
	}
	m, err := c.CreateModel(ctx, baseModel, lora)
	if err != nil {
		return nil, err
	}
	if err := m.LoadWeights(ctx, statePath, true); err != nil {
		return nil, fmt.Errorf("tinker: resuming model %s from %s: %w", m.ID(), statePath, err)
	}
	return m, nil
}

// Sample submits an asample request and waits for its result. NumSamples
// 0 means 1 and Type defaults to "sample". Sampling depends only on the
// request (its seed included), so failures are retried freely, and a
// request whose result the server lost (410) or that failed on the
// server's side is submitted again, up to MaxRetries times.
func (c *Client) Sample(ctx context.Context, req SampleRequest) (SampleResponse, error) {
	var zero SampleResponse
	if req.NumSamples == 0 {
		req.NumSamples = 1
	}
	if req.Type == "" {
		req.Type = "sample"
	}
	sources := 0
	for _, s := range []*string{req.BaseModel, req.ModelPath, req.SamplingSessionID} {
		if s != nil {
			sources++
		}
	}
	if sources != 1 {
		return zero, errors.New("tinker: asample: set exactly one of BaseModel, ModelPath and SamplingSessionID")
	}
	if req.NumSamples < 0 || req.SamplingParams.MaxTokens <= 0 {
		return zero, fmt.Errorf("tinker: asample: num_samples %d, max_tokens %d (both must be positive)", req.NumSamples, req.SamplingParams.MaxTokens)
	}
	promptLen := 0
	for _, ch := range req.Prompt.Chunks {
		promptLen += len(ch.Tokens)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return zero, fmt.Errorf("tinker: asample: encoding request: %w", err)
	}
	wantPrompt := req.PromptLogprobs != nil && *req.PromptLogprobs
	check := func(r SampleResponse) (SampleResponse, error) {
		return r, checkSample(&r, req.NumSamples, req.SamplingParams.MaxTokens, promptLen, wantPrompt)
	}
	cl := call{method: http.MethodPost, route: "asample", body: body}
	f, err := submitCall(ctx, c, "asample", cl, c.resultAccept(),
		func(data []byte) (SampleResponse, error) {
			var r SampleResponse
			if err := decode("asample", data, &r); err != nil {
				return r, err
			}
			return check(r)
		},
		func(data []byte) (SampleResponse, error) {
			var r SampleResponse
			if err := r.UnmarshalProto(data); err != nil {
				return r, malformed("asample", "%v", err)
			}
			return check(r)
		})
	if err != nil {
		return zero, err
	}
	f.resubmit = func(ctx context.Context) (string, error) { return c.submitRaw(ctx, cl) }
	return f.Wait(ctx)
}

// checkSample checks a sample result against its request. Prompt
// log-probs one fewer than the prompt's tokens (SkyRL's JAX engine leaves
// the first out instead of sending it null) get the leading null here.
func checkSample(r *SampleResponse, n, maxTokens, promptLen int, wantPrompt bool) error {
	if len(r.Sequences) != n {
		return malformed("asample", "%d sequences for num_samples %d", len(r.Sequences), n)
	}
	for i, s := range r.Sequences {
		if s.Logprobs != nil && len(s.Logprobs) != len(s.Tokens) {
			return malformed("asample", "sequence %d has %d logprobs for %d tokens", i, len(s.Logprobs), len(s.Tokens))
		}
		if len(s.Tokens) > maxTokens {
			return malformed("asample", "sequence %d has %d tokens, more than max_tokens %d", i, len(s.Tokens), maxTokens)
		}
		if s.StopReason != StopReasonStop && s.StopReason != StopReasonLength {
			return malformed("asample", "sequence %d has stop_reason %q", i, s.StopReason)
		}
	}
	if !wantPrompt {
		return nil
	}
	switch len(r.PromptLogprobs) {
	case promptLen:
	case promptLen - 1:
		// A one-token prompt has no log-prob to send either way.
		if promptLen > 1 && r.PromptLogprobs[0] == nil {
			return malformed("asample", "%d prompt_logprobs for %d prompt tokens, the first null: neither the full list nor the list without its first entry", len(r.PromptLogprobs), promptLen)
		}
		r.PromptLogprobs = append([]*float64{nil}, r.PromptLogprobs...)
		r.PromptLogprobsShifted = true
	default:
		return malformed("asample", "%d prompt_logprobs for %d prompt tokens", len(r.PromptLogprobs), promptLen)
	}
	return nil
}
