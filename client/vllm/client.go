package vllm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/text/toolcall"
)

// Options configure a Client.
type Options struct {
	// BaseURLs are the servers, e.g. "http://10.0.0.5:8000"; a trailing
	// "/v1" is accepted and removed. At least one is required; all must
	// serve the same model.
	BaseURLs []string
	// APIKey, when set, is sent as a bearer token (vLLM's --api-key).
	APIKey string
	// Model is the served model name. Empty means the first base model
	// (one without a parent) listed by /v1/models.
	Model string
	// HTTPClient sends the requests. Nil means a client of this package
	// with a pooled transport sized for Concurrency. Its Timeout should be
	// 0: AttemptTimeout bounds each attempt instead.
	HTTPClient *http.Client
	// MaxContext overrides the context length the server reports
	// (max_model_len).
	MaxContext int
	// StopTokens end an assistant message. Nil means the first token the
	// server's chat template writes after an assistant message's content
	// (for example <|im_end|>), found by rendering a probe conversation.
	// They are the whole stop set (requests send ignore_eos, so vLLM adds
	// no EOS of its own): list every token that should end a message, for
	// example all of generation_config's eos_token_id.
	StopTokens []int
	// ToolCallFormat is the text/toolcall format the served model writes
	// tool calls in (as vLLM's --tool-call-parser names it: "hermes" for
	// Qwen, "llama3_json" for Llama 3.1+); "" leaves tools to the rollout
	// engine's system-prompt description and compact calls.
	ToolCallFormat string
	// Retry says how failed attempts are retried.
	Retry Retry
	// AttemptTimeout bounds one HTTP attempt, a whole generation included
	// (default 5 minutes); the caller's context bounds the call.
	AttemptTimeout time.Duration
	// Concurrency bounds the sampling and scoring requests this Client has
	// in flight, across calls (default 128).
	Concurrency int
	// ScoreBatch is the number of sequences scored per request (default 8).
	ScoreBatch int
	// MaxResponseBytes caps the size of a reply (default 256 MiB).
	MaxResponseBytes int64
	// Logger receives retry warnings. Nil means slog.Default(); use
	// slog.New(slog.DiscardHandler) for silence.
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	if o.Retry.MaxAttempts <= 0 {
		o.Retry.MaxAttempts = 4
	}
	if o.Retry.BaseDelay <= 0 {
		o.Retry.BaseDelay = 200 * time.Millisecond
	}
	if o.Retry.MaxDelay <= 0 {
		o.Retry.MaxDelay = 10 * time.Second
	}
	o.Retry.MaxDelay = max(o.Retry.MaxDelay, o.Retry.BaseDelay)
	if o.AttemptTimeout <= 0 {
		o.AttemptTimeout = 5 * time.Minute
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 128
	}
	if o.ScoreBatch <= 0 {
		o.ScoreBatch = 8
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = 256 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Client is a policy.Policy served by vLLM. It is safe for concurrent use.
type Client struct {
	opts       Options
	http       *http.Client
	bal        balancer
	log        *slog.Logger
	sem        chan struct{}
	baseModel  string
	model      atomic.Pointer[string]
	maxContext int
	stopTokens []int
	closed     atomic.Bool
	closeOnce  sync.Once
}

var _ policy.Policy = (*Client)(nil)

// New connects to the servers: it lists their models (GET /v1/models, which
// also checks the API key), picks or checks the model, learns the context
// length and, unless given, the stop tokens. Failures are retried like any
// request, so New can wait, within ctx, for servers that are starting.
func New(ctx context.Context, opts Options) (*Client, error) {
	if len(opts.BaseURLs) == 0 {
		return nil, errors.New("vllm: Options.BaseURLs is empty")
	}
	if opts.ToolCallFormat != "" {
		if _, err := toolcall.New(opts.ToolCallFormat); err != nil {
			return nil, fmt.Errorf("vllm: Options.ToolCallFormat: %w", err)
		}
	}
	opts.setDefaults()
	c := &Client{opts: opts, log: opts.Logger, sem: make(chan struct{}, opts.Concurrency)}
	for _, raw := range opts.BaseURLs {
		base, err := normalizeBaseURL(raw)
		if err != nil {
			return nil, err
		}
		c.bal.eps = append(c.bal.eps, &endpoint{base: base})
	}
	c.http = opts.HTTPClient
	if c.http == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns = max(100, opts.Concurrency)
		tr.MaxIdleConnsPerHost = opts.Concurrency
		c.http = &http.Client{Transport: tr}
	}
	if err := c.connect(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func normalizeBaseURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("vllm: base URL %q: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("vllm: base URL %q: want http(s)://host[:port]", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("vllm: base URL %q: must not have a query or fragment", raw)
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1")
	u.RawPath = ""
	return strings.TrimRight(u.String(), "/"), nil
}

func (c *Client) connect(ctx context.Context) error {
	model := c.opts.Model
	maxLen := 0
	for _, ep := range c.bal.eps {
		data, err := c.get(ctx, ep, "/v1/models")
		if err != nil {
			return err
		}
		var list modelList
		if err := decode("/v1/models", data, &list); err != nil {
			return fmt.Errorf("%s: %w", ep.base, err)
		}
		if model == "" {
			for _, m := range list.Data {
				if m.Parent == nil || *m.Parent == "" {
					model = m.ID
					break
				}
			}
			if model == "" {
				return fmt.Errorf("vllm: %s/v1/models lists no base model", ep.base)
			}
		}
		i := slices.IndexFunc(list.Data, func(m modelCard) bool { return m.ID == model })
		if i < 0 {
			ids := make([]string, len(list.Data))
			for j, m := range list.Data {
				ids[j] = m.ID
			}
			return fmt.Errorf("vllm: %s does not serve model %q (it serves %q)", ep.base, model, ids)
		}
		if n := list.Data[i].MaxModelLen; n > 0 && (maxLen == 0 || n < maxLen) {
			maxLen = n
		}
	}
	c.baseModel = model
	c.model.Store(&model)

	c.maxContext = c.opts.MaxContext
	if c.maxContext <= 0 {
		c.maxContext = maxLen
	}
	if c.maxContext <= 0 {
		// Older servers leave max_model_len out of /v1/models; /tokenize
		// has it.
		_, n, err := c.tokenizeText(ctx, c.Model(), "")
		if err != nil {
			return err
		}
		if n <= 0 {
			return errors.New("vllm: the server reports no max_model_len; set Options.MaxContext")
		}
		c.maxContext = n
	}

	if c.opts.StopTokens != nil {
		c.stopTokens = slices.Clone(c.opts.StopTokens)
		return nil
	}
	stop, err := c.probeStopToken(ctx)
	if err != nil {
		return fmt.Errorf("%w (set Options.StopTokens)", err)
	}
	c.stopTokens = []int{stop}
	return nil
}

// probeStopToken finds the token the chat template writes right after an
// assistant message's content: render [user] with the generation prompt,
// then [user, assistant]; the second must extend the first with the
// content's tokens, and the token after them ends the message.
func (c *Client) probeStopToken(ctx context.Context) (int, error) {
	const content = "probe answer"
	user := policy.Message{Role: policy.RoleUser, Content: "probe question"}
	gen, err := c.RenderChat(ctx, []policy.Message{user}, true)
	if err != nil {
		return 0, fmt.Errorf("vllm: probing the stop token: %w", err)
	}
	full, err := c.RenderChat(ctx, []policy.Message{user, {Role: policy.RoleAssistant, Content: content}}, false)
	if err != nil {
		return 0, fmt.Errorf("vllm: probing the stop token: %w", err)
	}
	ids, err := c.Encode(ctx, content)
	if err != nil {
		return 0, fmt.Errorf("vllm: probing the stop token: %w", err)
	}
	head := append(slices.Clone(gen), ids...)
	if len(full) <= len(head) || !slices.Equal(full[:len(head)], head) {
		return 0, errors.New("vllm: cannot find the stop token: the chat template does not render an assistant message as the generation prompt, its content and an end token")
	}
	return full[len(head)], nil
}

// Info implements policy.Policy. Name is the model requests go to: the base
// model or the adapter chosen with SetModel.
func (c *Client) Info() policy.Info {
	return policy.Info{Name: c.Model(), MaxContext: c.maxContext, StopTokens: slices.Clone(c.stopTokens)}
}

// Model returns the model name requests are sent to.
func (c *Client) Model() string { return *c.model.Load() }

// BaseModel returns the base model's name.
func (c *Client) BaseModel() string { return c.baseModel }

// SetModel sends later requests to the model or LoRA adapter name (for
// example one loaded with LoadLoRA); an empty name means the base model.
// Requests already in flight keep the model they started with.
func (c *Client) SetModel(name string) {
	if name == "" {
		name = c.baseModel
	}
	c.model.Store(&name)
}

// Close closes idle connections; later calls return ErrClosed. Calls in
// flight finish normally.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.http.CloseIdleConnections()
	})
	return nil
}

// forEach runs fn(i) for i in [0, n) on at most Concurrency goroutines,
// each run holding one of the Client's request slots. It returns when all
// started runs have returned; runs not started when ctx ends are skipped.
func (c *Client) forEach(ctx context.Context, n int, fn func(i int)) {
	workers := min(n, c.opts.Concurrency)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				select {
				case c.sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
				fn(i)
				<-c.sem
			}
		})
	}
	wg.Wait()
}

// Pinned is a Client whose requests all name one model, whatever
// SetModel says: one of several LoRA adapters loaded at once, such as
// the versions of a learner's weights a trainer samples while it trains.
// It shares the Client's connections, retries and limits.
type Pinned struct {
	c     *Client
	model string
}

var _ policy.Policy = (*Pinned)(nil)

// Pin returns the client with requests naming model.
func (c *Client) Pin(model string) *Pinned { return &Pinned{c: c, model: model} }

// Model returns the model the requests name.
func (p *Pinned) Model() string { return p.model }

// Info implements policy.Policy: the client's, named for the model.
func (p *Pinned) Info() policy.Info {
	i := p.c.Info()
	i.Name = p.model
	return i
}

// RenderChat implements policy.Policy.
func (p *Pinned) RenderChat(ctx context.Context, messages []policy.Message, addGenerationPrompt bool) ([]int, error) {
	return p.c.renderChat(ctx, p.model, messages, nil, addGenerationPrompt)
}

// RenderChatTools implements policy.ToolRenderer.
func (p *Pinned) RenderChatTools(ctx context.Context, messages []policy.Message, tools []policy.Tool, addGenerationPrompt bool) ([]int, error) {
	return p.c.renderChat(ctx, p.model, messages, tools, addGenerationPrompt)
}

// ToolCallFormat implements policy.ToolRenderer.
func (p *Pinned) ToolCallFormat() string { return p.c.ToolCallFormat() }

// Encode implements policy.Policy.
func (p *Pinned) Encode(ctx context.Context, text string) ([]int, error) {
	ids, _, err := p.c.tokenizeText(ctx, p.model, text)
	return ids, err
}

// Decode implements policy.Policy.
func (p *Pinned) Decode(ctx context.Context, ids []int) (string, error) {
	return p.c.decodeIDs(ctx, p.model, ids)
}

// Sample implements policy.Policy.
func (p *Pinned) Sample(ctx context.Context, reqs []policy.Request) ([]policy.Sample, error) {
	return p.c.sample(ctx, p.model, reqs)
}

// Score implements policy.Policy.
func (p *Pinned) Score(ctx context.Context, reqs []policy.ScoreRequest) ([][]float64, error) {
	return p.c.score(ctx, p.model, reqs)
}
