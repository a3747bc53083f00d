package openenv

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/rollout"
)

func clientFor(hs *httptest.Server) *Client {
	cfg := DefaultClientConfig()
	cfg.URL = hs.URL
	cfg.Timeout = 10 * time.Second
	return NewClient(cfg)
}

// TestRoundTripEveryBuiltinEnvironment plays every bundled environment
// in-process and through a server and the client with the same seeds and
// actions (valid ones, random ones and malformed ones): observations,
// rewards, ends and step outcomes must be the same.
func TestRoundTripEveryBuiltinEnvironment(t *testing.T) {
	for _, name := range []string{"bandit", "codeexec", "countdown", "frozenlake", "sokoban", "webshop"} {
		t.Run(name, func(t *testing.T) {
			_, hs := serve(t, name, Options{})
			factory, err := envs.NewFactory(name, nil)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for seed := range uint64(6) {
				local, err := factory.New()
				if err != nil {
					t.Fatal(err)
				}
				remote := clientFor(hs)
				want, err := local.Reset(seed)
				if err != nil {
					t.Fatal(err)
				}
				got, err := remote.Reset(seed)
				if err != nil {
					t.Fatal(err)
				}
				if got != want || remote.Instruction() != local.Instruction() || fmt.Sprint(remote.Actions()) != fmt.Sprint(local.Actions()) {
					t.Fatalf("seed %d reset differs:\n%q\n%q", seed, got, want)
				}
				for step := 0; step < 40; step++ {
					action := pickAction(t, local, rng)
					w, werr := local.Step(action)
					g, gerr := remote.Step(action)
					if (werr != nil) != (gerr != nil) {
						t.Fatalf("seed %d step %d %q: errors %v / %v", seed, step, action, werr, gerr)
					}
					if werr != nil {
						break
					}
					if !sameStep(g, w) {
						t.Fatalf("seed %d step %d %q:\nremote %+v\nlocal  %+v", seed, step, action, g, w)
					}
					if remote.Render() != local.Render() {
						t.Fatalf("seed %d step %d: Render differs", seed, step)
					}
					if w.Done {
						if _, err := remote.Step(action); !errors.Is(err, envs.ErrEpisodeDone) {
							t.Errorf("step after the end: %v", err)
						}
						break
					}
				}
				if err := remote.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			}
		})
	}
}

// pickAction draws a valid action, a random word or a malformed one.
func pickAction(t *testing.T, env envs.Env, rng *rand.Rand) string {
	switch r := rng.IntN(10); {
	case r == 0:
		return "]]not an action[[ " + strings.Repeat("x", rng.IntN(5))
	case r == 1:
		return ""
	}
	if ra, ok := env.(envs.RandomActor); ok {
		a, err := ra.RandomAction(rng)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	if vocab := env.Actions(); len(vocab) > 0 {
		return vocab[rng.IntN(len(vocab))]
	}
	// Free-form actions without a random actor (programs): the expert's.
	expert, ok := env.(envs.Expert)
	if !ok {
		t.Fatal("no way to choose an action")
	}
	adv, err := expert.Advise(1, rng)
	if err != nil || len(adv.Actions) == 0 {
		return "print(1)"
	}
	return adv.Actions[0]
}

func sameStep(a, b envs.StepResult) bool {
	am, bm := a.Info.Metrics, b.Info.Metrics
	if len(am) == 0 && len(bm) == 0 {
		am, bm = nil, nil
	}
	return a.Observation == b.Observation && a.Reward == b.Reward && a.Done == b.Done &&
		a.Info.Success == b.Info.Success && a.Info.ActionValid == b.Info.ActionValid &&
		a.Info.ActionEffective == b.Info.ActionEffective && maps.Equal(am, bm)
}

func TestClientErrors(t *testing.T) {
	srv, hs := serve(t, "sokoban", Options{MaxSessions: 1})
	c := clientFor(hs)
	if _, err := c.Step("Up"); !errors.Is(err, envs.ErrNotReset) {
		t.Errorf("Step before Reset: %v", err)
	}
	if _, err := c.Reset(1); err != nil {
		t.Fatal(err)
	}
	// The server is full: a second client's reset fails with the code.
	d := clientFor(hs)
	_, err := d.Reset(1)
	var se *ServerError
	if !errors.As(err, &se) || se.Code != CodeCapacityReached {
		t.Errorf("second client: %v", err)
	}
	// The server goes away mid-episode: the next step is an error.
	srv.Close()
	hs.CloseClientConnections()
	if _, err := c.Step("Up"); err == nil {
		t.Error("step on a closed server succeeded")
	}

	bad := DefaultClientConfig()
	for _, u := range []string{"", "ftp://x", "::"} {
		bad.URL = u
		if err := bad.Validate(); err == nil {
			t.Errorf("url %q accepted", u)
		}
	}
	bad.URL, bad.Reset = "http://127.0.0.1:1", map[string]any{"seed": 3}
	if err := bad.Validate(); err == nil {
		t.Error("reset.seed accepted")
	}
	bad.Reset, bad.Timeout = nil, time.Second
	if _, err := NewClient(bad).Reset(1); err == nil || !strings.Contains(err.Error(), "connecting") {
		t.Errorf("no server: %v", err)
	}
}

func TestClientOnAForeignObservationModel(t *testing.T) {
	// An OpenEnv server whose observations have no "text": the agent sees
	// the observation as JSON, success falls back to a positive final
	// reward, and a rejected action is an invalid step.
	c := DefaultClientConfig()
	c.TextField = "board"
	_, hs := serve(t, "frozenlake", Options{})
	c.URL = hs.URL
	cl := NewClient(c)
	got, err := cl.Reset(1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, `{"action_effective":true,"action_valid":true,"actions":["Left"`) {
		t.Errorf("foreign observation rendered as %q", got)
	}
	c.ActionField = "move"
	cl2 := NewClient(c)
	if _, err := cl2.Reset(1); err != nil {
		t.Fatal(err)
	}
	res, err := cl2.Step("Left")
	if err != nil || res.Info.ActionValid || res.Done || res.Reward != 0 {
		t.Errorf("a rejected action: %+v, %v; want an invalid step", res, err)
	}
}

func TestOpenEnvIsRegistered(t *testing.T) {
	_, hs := serve(t, "sokoban", Options{})
	f, err := envs.NewFactoryYAML("openenv", []byte("url: "+hs.URL+"\nreset:\n  env_config:\n    dim_x: 7\n    dim_y: 7\n"))
	if err != nil {
		t.Fatal(err)
	}
	env, err := f.New()
	if err != nil {
		t.Fatal(err)
	}
	defer env.(*Client).Close()
	text, err := env.Reset(4)
	if err != nil {
		t.Fatal(err)
	}
	big, _ := envs.NewFactoryYAML("sokoban", []byte("dim_x: 7\ndim_y: 7"))
	benv, _ := big.New()
	if want, _ := benv.Reset(4); text != want {
		t.Errorf("remote reset with env_config:\n%s\nwant\n%s", text, want)
	}
	if _, err := envs.NewFactoryYAML("openenv", []byte("url: ''")); err == nil || !strings.Contains(err.Error(), "url") {
		t.Errorf("missing url: %v", err)
	}
}

// TestRolloutOverTheWire plays the rollout engine's random policy on a
// remote environment and in-process: the same conversations and scores,
// and the engine closes every session it opened.
func TestRolloutOverTheWire(t *testing.T) {
	srv, hs := serve(t, "frozenlake", Options{})
	remote, err := envs.NewFactoryYAML("openenv", []byte("url: "+hs.URL))
	if err != nil {
		t.Fatal(err)
	}
	local, _ := envs.NewFactory("frozenlake", nil)
	cfg := rollout.DefaultConfig()
	cfg.PromptStyle = rollout.PromptCompact
	seeds := make([]uint64, 24)
	for i := range seeds {
		seeds[i] = uint64(100 + i)
	}
	want, err := rollout.RunRandom(context.Background(), cfg, local, seeds, 7)
	if err != nil {
		t.Fatal(err)
	}
	got, err := rollout.RunRandom(context.Background(), cfg, remote, seeds, 7)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i].Err != "" || got[i].Score != want[i].Score || got[i].Success != want[i].Success ||
			fmt.Sprint(got[i].Messages) != fmt.Sprint(want[i].Messages) {
			t.Fatalf("seed %d: remote %+v\nlocal %+v", seeds[i], got[i], want[i])
		}
	}
	waitSessions(t, srv, 0)
}
