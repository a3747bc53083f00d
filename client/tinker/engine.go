package tinker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Engine names the training engine behind a Tinker API server: what it
// honours of a request differs (docs/tinker.md, "Engines").
type Engine string

// The engines told apart.
const (
	// EngineUnknown is a server not identified.
	EngineUnknown Engine = "unknown"
	// EngineAgentrl is this project's offline server (server/tinkerapi).
	EngineAgentrl Engine = "agentrl"
	// EngineTinker is Thinking Machines' hosted Tinker.
	EngineTinker Engine = "tinker"
	// EngineSkyRLJAX is SkyRL's Tinker server on its JAX backend.
	EngineSkyRLJAX Engine = "skyrl-jax"
	// EngineSkyRLTrain is SkyRL's Tinker server on SkyRL-Train (FSDP or
	// Megatron training, vLLM sampling).
	EngineSkyRLTrain Engine = "skyrl-train"
)

// EngineReport is what identified a server's engine.
type EngineReport struct {
	Engine Engine
	// Evidence says what the server reported that identified it.
	Evidence []string
}

// hostedConfigFlags are client/config flags that hosted Tinker's reply
// carries (the SDK's types/client_config_response.py) and that neither
// SkyRL's server (which answers pjwt_auth_enabled alone) nor agentrl's
// sends.
var hostedConfigFlags = []string{
	"credential_default_source", "sample_dispatch_bytes_semaphore_size", "inflight_response_bytes_semaphore_size",
	"fwdbwd_max_chunk_bytes_count", "fwdbwd_dispatch_bytes_semaphore_size", "billing_exception_max_pause_duration_sec",
	"sample_no_retries", "sample_enable_stuck_detection", "sample_max_concurrent_requests", "create_model_via_load_weights",
}

// skyRLRootName is the name SkyRL's server gives itself at GET / (its
// FastAPI app's title).
const skyRLRootName = "Tinker API Mock"

// DetectEngine identifies the server's engine from what it reports:
//
//   - agentrl's offline server names itself in get_server_capabilities
//     (engine "agentrl");
//   - hosted Tinker answers client/config with the SDK's flags that only
//     it sends (credential_default_source, sample_dispatch_bytes_semaphore_size,
//     …) or asks for the JWT exchange, or is at *.thinkingmachines.ai or
//     *.thinkingmachines.dev;
//   - SkyRL's server answers client/config with pjwt_auth_enabled alone,
//     and GET / with its name, "Tinker API Mock". Its backends differ in
//     the prompt log-probs they return: JAX one fewer than the prompt's
//     tokens (no leading null), SkyRL-Train one per token. So a SkyRL
//     server is asked for probe's prompt log-probs on baseModel (probe:
//     at least two token ids of its vocabulary; one asample call).
//
// A server that shows none of these is EngineUnknown.
func (c *Client) DetectEngine(ctx context.Context, baseModel string, probe []int) (EngineReport, error) {
	caps, err := c.Capabilities(ctx)
	if err != nil {
		return EngineReport{Engine: EngineUnknown}, err
	}
	if caps.Engine == string(EngineAgentrl) {
		return EngineReport{Engine: EngineAgentrl, Evidence: []string{`get_server_capabilities names engine "agentrl"`}}, nil
	}
	keys := c.configKeys
	var hosted []string
	for _, k := range hostedConfigFlags {
		if slices.Contains(keys, k) {
			hosted = append(hosted, k)
		}
	}
	switch {
	case len(hosted) > 0:
		return EngineReport{Engine: EngineTinker, Evidence: []string{"client/config sends hosted Tinker's flags " + strings.Join(hosted, ", ")}}, nil
	case c.config.PJWTAuthEnabled:
		return EngineReport{Engine: EngineTinker, Evidence: []string{"client/config asks for the JWT exchange (pjwt_auth_enabled)"}}, nil
	}
	if u, err := url.Parse(c.base); err == nil {
		h := strings.ToLower(u.Hostname())
		for _, d := range []string{"thinkingmachines.ai", "thinkingmachines.dev"} {
			if h == d || strings.HasSuffix(h, "."+d) {
				return EngineReport{Engine: EngineTinker, Evidence: []string{"the server is at " + h}}, nil
			}
		}
	}
	var evidence []string
	if slices.Equal(keys, []string{"pjwt_auth_enabled"}) {
		evidence = append(evidence, "client/config answers pjwt_auth_enabled alone, as SkyRL's server")
	}
	if name, err := c.rootName(ctx); err == nil && name == skyRLRootName {
		evidence = append(evidence, fmt.Sprintf("GET / names the server %q, as SkyRL's", name))
	}
	if len(evidence) == 0 {
		return EngineReport{Engine: EngineUnknown, Evidence: []string{"no engine's signature: get_server_capabilities names no engine, client/config flags " + fmt.Sprint(keys)}}, nil
	}
	if len(probe) < 2 {
		return EngineReport{Engine: EngineUnknown, Evidence: evidence}, errors.New("tinker: DetectEngine: a SkyRL server needs a probe of at least two tokens to tell its backend")
	}
	yes := true
	var seed int64
	resp, err := c.Sample(ctx, SampleRequest{
		Prompt:         TokensInput(probe),
		SamplingParams: SamplingParams{MaxTokens: 1, Seed: &seed, Temperature: 1, TopK: -1, TopP: 1},
		PromptLogprobs: &yes,
		BaseModel:      &baseModel,
	})
	if err != nil {
		return EngineReport{Engine: EngineUnknown, Evidence: evidence}, fmt.Errorf("tinker: asking SkyRL's server for prompt log-probs, to tell its backend: %w", err)
	}
	if resp.PromptLogprobsShifted {
		return EngineReport{Engine: EngineSkyRLJAX, Evidence: append(evidence, fmt.Sprintf("%d prompt log-probs for %d prompt tokens, as SkyRL's JAX backend", len(probe)-1, len(probe)))}, nil
	}
	return EngineReport{Engine: EngineSkyRLTrain, Evidence: append(evidence, fmt.Sprintf("%d prompt log-probs for %d prompt tokens, the first null, as SkyRL-Train (vLLM)", len(probe), len(probe)))}, nil
}

// rootName returns the "name" of the server's GET / reply (outside
// /api/v1).
func (c *Client) rootName(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", ContentTypeJSON)
	req.Header.Set("User-Agent", userAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /: HTTP %d", resp.StatusCode)
	}
	var root struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, maxErrorBody)).Decode(&root); err != nil {
		return "", err
	}
	return root.Name, nil
}
