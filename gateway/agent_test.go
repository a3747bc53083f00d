package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// agentMode is how a Go agent plays an episode.
type agentMode int

const (
	playNormally  agentMode = iota
	crashAfterOne           // one model request, then it reports its failure
	trimHistory             // its third request re-sends only the last turn
	runForever              // requests until the gateway refuses (its deadline)
	viaMetadata             // names its episode in metadata, not the header
)

// goAgent is an agent program using go-openai against a gateway at base:
// it claims episodes until none is left, and plays each with a calculator
// tool it runs itself. modeOf picks each episode's behaviour.
type goAgent struct {
	base   string
	modeOf func(group, sample, step int) agentMode
	turns  int
}

type claimed struct {
	Episode string `json:"episode"`
	Task    struct {
		Seed   uint64 `json:"seed"`
		Prompt string `json:"prompt"`
	} `json:"task"`
	Group, Sample, Step int
	Model               string
}

// run claims and plays episodes until the gateway has none for `idle`
// or is closed.
func (a *goAgent) run(ctx context.Context, idle time.Duration) error {
	for {
		var c claimed
		status, err := postJSON(ctx, fmt.Sprintf("%s/v1/episodes/claim?wait=%g", a.base, idle.Seconds()), nil, &c)
		if err != nil {
			return err
		}
		switch status {
		case http.StatusOK:
		case http.StatusNoContent, http.StatusGone:
			return nil
		default:
			return fmt.Errorf("claim: status %d", status)
		}
		if err := a.play(ctx, c); err != nil {
			return fmt.Errorf("episode %s: %w", c.Episode, err)
		}
	}
}

var calculator = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
	Name: "calculator", Description: "Evaluates a+b, a-b or a*b on integers.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string"}},"required":["expression"]}`),
}}

// calc evaluates "a op b".
func calc(expr string) string {
	for _, op := range []string{"*", "+", "-"} {
		if l, r, ok := strings.Cut(expr, op); ok {
			a, err1 := strconv.Atoi(strings.TrimSpace(l))
			b, err2 := strconv.Atoi(strings.TrimSpace(r))
			if err1 != nil || err2 != nil {
				break
			}
			switch op {
			case "*":
				return strconv.Itoa(a * b)
			case "+":
				return strconv.Itoa(a + b)
			default:
				return strconv.Itoa(a - b)
			}
		}
	}
	return "error: cannot evaluate " + strconv.Quote(expr)
}

func (a *goAgent) play(ctx context.Context, c claimed) error {
	mode := a.modeOf(c.Group, c.Sample, c.Step)
	cfg := openai.DefaultConfig("none")
	cfg.BaseURL = a.base + "/v1"
	cfg.HTTPClient = &http.Client{Transport: headerTransport{episode: c.Episode}}
	var metadata map[string]string
	if mode == viaMetadata {
		cfg.HTTPClient = http.DefaultClient
		metadata = map[string]string{"agentrl_episode": c.Episode}
	}
	client := openai.NewClientWithConfig(cfg)
	msgs := []openai.ChatCompletionMessage{
		{Role: "system", Content: "You solve arithmetic tasks with the calculator tool."},
		{Role: "user", Content: c.Task.Prompt},
	}
	turns := a.turns
	if mode == runForever {
		turns = 1 << 20
	}
	var last string
	for turn := 0; turn < turns; turn++ {
		send := msgs
		if mode == trimHistory && turn == 2 {
			send = []openai.ChatCompletionMessage{msgs[0], msgs[len(msgs)-1]}
		}
		resp, err := client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{
			Model: c.Model, Messages: send, Tools: []openai.Tool{calculator}, MaxCompletionTokens: 24, Metadata: metadata,
		})
		if err != nil {
			if mode == runForever {
				return nil // refused: past its deadline
			}
			return err
		}
		reply := resp.Choices[0].Message
		last = reply.Content
		msgs = append(msgs, openai.ChatCompletionMessage{Role: "assistant", Content: reply.Content, ToolCalls: reply.ToolCalls})
		if mode == crashAfterOne {
			_, err := postJSON(ctx, a.base+"/v1/episodes/"+c.Episode+"/fail", map[string]string{"error": "the agent crashed"}, nil)
			return err
		}
		if len(reply.ToolCalls) > 0 {
			for _, tc := range reply.ToolCalls {
				var args struct {
					Expression string `json:"expression"`
				}
				_ = json.Unmarshal([]byte(tc.Function.Arguments), &args)
				msgs = append(msgs, openai.ChatCompletionMessage{Role: "tool", ToolCallID: tc.ID, Name: tc.Function.Name, Content: calc(args.Expression)})
			}
		} else {
			msgs = append(msgs, openai.ChatCompletionMessage{Role: "user", Content: "Go on."})
		}
	}
	reward := 0.0
	if strings.Contains(last, "12") {
		reward = 1
	}
	status, err := postJSON(ctx, a.base+"/v1/episodes/"+c.Episode+"/reward", map[string]float64{"reward": reward}, nil)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("reward: status %d", status)
	}
	return nil
}

// headerTransport names the episode on every request.
type headerTransport struct{ episode string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Agentrl-Episode", h.episode)
	return http.DefaultTransport.RoundTrip(r)
}

func postJSON(ctx context.Context, url string, body, out any) (int, error) {
	var rd *bytes.Reader
	if body == nil {
		rd = bytes.NewReader(nil)
	} else {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return resp.StatusCode, err
		}
	}
	return resp.StatusCode, nil
}
