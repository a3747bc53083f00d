package openenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/agentrl/agentrl/envs"
)

// ClientConfig is the configuration of the "openenv" environment: an
// episode played on a remote OpenEnv server, one WebSocket session per
// environment instance.
type ClientConfig struct {
	// URL is the server's base URL (http, https, ws or wss); the session
	// is opened at URL + "/ws".
	URL string `yaml:"url"`
	// APIKey is sent as "Authorization: Bearer <key>"; APIKeyEnv names an
	// environment variable to read it from instead (keeps it out of
	// configs and run identities).
	APIKey    string `yaml:"api_key"`
	APIKeyEnv string `yaml:"api_key_env"`
	// ActionField is the action model's text field (agentrl's and
	// OpenEnv's text environments: "message").
	ActionField string `yaml:"action_field"`
	// TextField is the observation field shown to the agent ("text" on
	// agentrl's servers); when an observation lacks it, the agent sees the
	// whole observation as JSON.
	TextField string `yaml:"text_field"`
	// Instruction, when set, replaces the observation's "instruction"
	// field as the task description.
	Instruction string `yaml:"instruction"`
	// Reset holds extra reset parameters sent with every reset (for an
	// agentrl server: env_config, level).
	Reset map[string]any `yaml:"reset"`
	// Timeout bounds connecting and every message round trip.
	Timeout time.Duration `yaml:"timeout"`
	// MaxMessageBytes bounds one received message.
	MaxMessageBytes int64 `yaml:"max_message_bytes"`
}

// DefaultClientConfig returns the defaults: agentrl's field names, a
// one-minute timeout, 4 MiB messages.
func DefaultClientConfig() ClientConfig {
	return ClientConfig{ActionField: "message", TextField: "text", Timeout: time.Minute, MaxMessageBytes: 4 << 20}
}

// Validate implements envs.Validator.
func (c *ClientConfig) Validate() error {
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "":
		return errors.New("url: the OpenEnv server's base URL is required (e.g. http://127.0.0.1:8000)")
	case err != nil:
		return fmt.Errorf("url: %v", err)
	case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ws" && u.Scheme != "wss":
		return fmt.Errorf("url: scheme must be http, https, ws or wss, got %q", u.Scheme)
	case c.ActionField == "":
		return errors.New("action_field: must not be empty")
	case c.Timeout <= 0:
		return fmt.Errorf("timeout: must be positive, got %v", c.Timeout)
	case c.MaxMessageBytes < 1024:
		return fmt.Errorf("max_message_bytes: must be at least 1024, got %d", c.MaxMessageBytes)
	}
	for _, k := range []string{"seed", "episode_id"} {
		if _, ok := c.Reset[k]; ok {
			return fmt.Errorf("reset.%s: set by the rollout engine, not the config", k)
		}
	}
	return nil
}

func (c *ClientConfig) wsURL() string {
	u, _ := url.Parse(c.URL)
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/ws"
	return u.String()
}

func (c *ClientConfig) key() string {
	if c.APIKeyEnv != "" {
		return lookupEnv(c.APIKeyEnv)
	}
	return c.APIKey
}

// lookupEnv reads an environment variable (a variable for tests).
var lookupEnv = os.Getenv

func init() {
	envs.MustRegister("openenv", envs.Registration[ClientConfig]{
		Description: "an environment on a remote OpenEnv server (env.config.url), one WebSocket session per episode",
		Default:     DefaultClientConfig,
		New:         func(cfg ClientConfig) (envs.Env, error) { return NewClient(cfg), nil },
	})
}

// Client is an envs.Env whose episodes run on an OpenEnv server. It
// connects on the first Reset and keeps one session for its lifetime;
// Close ends it (the rollout engine closes every environment it made).
// A step the server rejects as invalid (VALIDATION_ERROR: an action that
// does not fit the action model) is an invalid step, as for a local
// environment; any other server error, a timeout or a lost connection is
// an error, which fails the episode.
type Client struct {
	cfg ClientConfig
	// mu serialises the calls: the engine may close a client whose step
	// it abandoned after a timeout while that step still runs.
	mu   sync.Mutex
	conn *websocket.Conn

	text        string
	instruction string
	actions     []string
	started     bool
	done        bool
}

var (
	_ envs.Env = (*Client)(nil)
)

// NewClient returns a client for cfg (which must be valid); it does not
// connect yet.
func NewClient(cfg ClientConfig) *Client { return &Client{cfg: cfg} }

// ServerError is an error message from the server.
type ServerError struct {
	Code, Message string
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("openenv server: %s (%s)", e.Message, e.Code)
}

func (c *Client) connect() error {
	if c.conn != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	opts := &websocket.DialOptions{}
	if k := c.cfg.key(); k != "" {
		opts.HTTPHeader = http.Header{"Authorization": {"Bearer " + k}}
	}
	conn, resp, err := websocket.Dial(ctx, c.cfg.wsURL(), opts)
	if err != nil {
		if resp != nil {
			return fmt.Errorf("openenv: connecting to %s: HTTP %s", c.cfg.wsURL(), resp.Status)
		}
		return fmt.Errorf("openenv: connecting to %s: %w", c.cfg.wsURL(), err)
	}
	conn.SetReadLimit(c.cfg.MaxMessageBytes)
	c.conn = conn
	return nil
}

// roundTrip sends one message and reads the reply's data.
func (c *Client) roundTrip(msg map[string]any) (string, json.RawMessage, error) {
	if err := c.connect(); err != nil {
		return "", nil, err
	}
	data, err := json.Marshal(msg)
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	if err := c.conn.Write(ctx, websocket.MessageText, data); err != nil {
		c.abandon()
		return "", nil, fmt.Errorf("openenv: sending %s: %w", msg["type"], err)
	}
	_, reply, err := c.conn.Read(ctx)
	if err != nil {
		c.abandon()
		return "", nil, fmt.Errorf("openenv: waiting for the reply to %s: %w", msg["type"], err)
	}
	var m struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(reply, &m); err != nil {
		return "", nil, fmt.Errorf("openenv: the reply to %s is not JSON: %v", msg["type"], err)
	}
	if m.Type == "error" {
		var e struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		}
		json.Unmarshal(m.Data, &e)
		return "", nil, &ServerError{Code: e.Code, Message: e.Message}
	}
	return m.Type, m.Data, nil
}

// abandon drops a connection that failed mid-message.
func (c *Client) abandon() {
	if c.conn != nil {
		c.conn.CloseNow()
		c.conn = nil
	}
}

// Close ends the session (a close message, then the close handshake).
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.conn.Write(ctx, websocket.MessageText, []byte(`{"type":"close"}`))
	err := c.conn.Close(websocket.StatusNormalClosure, "")
	c.conn = nil
	return err
}

// remoteObservation is the observation part of a result, any model.
type remoteObservation map[string]json.RawMessage

func (c *Client) parseResult(typ string, data json.RawMessage) (Result, remoteObservation, error) {
	if typ != "observation" {
		return Result{}, nil, fmt.Errorf("openenv: expected an observation, got a %q message", typ)
	}
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return Result{}, nil, fmt.Errorf("openenv: observation message: %v", err)
	}
	var obs remoteObservation
	if err := json.Unmarshal(r.Observation, &obs); err != nil || obs == nil {
		return Result{}, nil, fmt.Errorf("openenv: the observation is not an object")
	}
	if r.Reward != nil && (math.IsNaN(*r.Reward) || math.IsInf(*r.Reward, 0)) {
		return Result{}, nil, fmt.Errorf("openenv: reward %v", *r.Reward)
	}
	return r, obs, nil
}

// render picks the text the agent sees.
func (c *Client) render(obs remoteObservation) string {
	if raw, ok := obs[c.cfg.TextField]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	keys := make([]string, 0, len(obs))
	for k := range obs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kj, _ := json.Marshal(k)
		b.Write(kj)
		b.WriteByte(':')
		b.Write(obs[k])
	}
	b.WriteByte('}')
	return b.String()
}

func (obs remoteObservation) boolField(name string, fallback bool) bool {
	var v bool
	if raw, ok := obs[name]; ok && json.Unmarshal(raw, &v) == nil {
		return v
	}
	return fallback
}

// Reset implements envs.Env: a reset message with the seed and the
// configured reset parameters.
func (c *Client) Reset(seed uint64) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	data := map[string]any{"seed": seed}
	for k, v := range c.cfg.Reset {
		data[k] = v
	}
	typ, raw, err := c.roundTrip(map[string]any{"type": "reset", "data": data})
	if err != nil {
		return "", err
	}
	r, obs, err := c.parseResult(typ, raw)
	if err != nil {
		return "", err
	}
	c.text, c.started, c.done = c.render(obs), true, r.Done
	c.instruction, c.actions = c.cfg.Instruction, nil
	if c.instruction == "" {
		json.Unmarshal(obs["instruction"], &c.instruction)
	}
	json.Unmarshal(obs["actions"], &c.actions)
	return c.text, nil
}

// Step implements envs.Env.
func (c *Client) Step(action string) (envs.StepResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		return envs.StepResult{}, envs.ErrNotReset
	}
	if c.done {
		return envs.StepResult{}, envs.ErrEpisodeDone
	}
	typ, raw, err := c.roundTrip(map[string]any{"type": "step", "data": map[string]any{c.cfg.ActionField: action}})
	var se *ServerError
	if errors.As(err, &se) && se.Code == CodeValidation {
		return envs.StepResult{Observation: c.text}, nil // an invalid step: nothing changed
	}
	if err != nil {
		return envs.StepResult{}, err
	}
	r, obs, err := c.parseResult(typ, raw)
	if err != nil {
		return envs.StepResult{}, err
	}
	c.text, c.done = c.render(obs), r.Done
	res := envs.StepResult{Observation: c.text, Done: r.Done}
	if r.Reward != nil {
		res.Reward = *r.Reward
	}
	res.Info = envs.Info{
		// Servers without a success field: a finished episode with a
		// positive reward succeeded.
		Success:         obs.boolField("success", r.Done && res.Reward > 0),
		ActionValid:     obs.boolField("action_valid", true),
		ActionEffective: obs.boolField("action_effective", true),
	}
	if raw, ok := obs["metrics"]; ok {
		var m map[string]float64
		if json.Unmarshal(raw, &m) == nil && len(m) > 0 {
			res.Info.Metrics = m
		}
	}
	return res, nil
}

// Render implements envs.Env: the last observation's text.
func (c *Client) Render() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.text
}

// Instruction implements envs.Env: the configured instruction, or the one
// the last reset's observation carried.
func (c *Client) Instruction() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.instruction == "" {
		return c.cfg.Instruction
	}
	return c.instruction
}

// Actions implements envs.Env: the vocabulary the last reset's
// observation listed (nil: free-form).
func (c *Client) Actions() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.actions
}
