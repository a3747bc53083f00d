package openenv

import (
	"encoding/json"
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/internal/yamlpath"
)

// episode is one environment instance behind the protocol: a WebSocket
// session's, or a one-shot HTTP request's.
type episode struct {
	srv *Server
	env envs.Env

	id      *string
	seed    *uint64
	steps   int
	started bool
	done    bool
	success bool
}

func (s *Server) newEpisode() (*episode, error) {
	env, err := s.factory.New()
	if err != nil {
		return nil, err
	}
	return &episode{srv: s, env: env}, nil
}

// reset starts an episode as p asks: a task, a level or a seed (a random
// one when none is given), with the session's env_config.
func (e *episode) reset(p resetParams) (Result, error) {
	if p.EnvConfig != nil {
		env, err := e.srv.configuredEnv(p.EnvConfig)
		if err != nil {
			return Result{}, err
		}
		e.close()
		e.env = env
	}
	seed := p.Seed
	if p.Split != nil {
		s, err := e.srv.splits.seed(*p.Split, *p.Index)
		if err != nil {
			return Result{}, invalid("data.index", "%v", err)
		}
		seed = &s
	}
	var text string
	var err error
	switch {
	case p.Level != nil:
		loader, ok := e.env.(envs.LevelLoader)
		if !ok {
			return Result{}, invalid("data.level", "environment %q does not load levels", e.srv.name)
		}
		if text, err = loader.LoadLevel(*p.Level); err != nil {
			return Result{}, invalid("data.level", "%v", err)
		}
		seed = nil
	default:
		if seed == nil {
			s := e.srv.randomSeed()
			seed = &s
		}
		if text, err = e.env.Reset(*seed); err != nil {
			return Result{}, fmt.Errorf("reset: %w", err)
		}
	}
	e.id, e.seed, e.steps, e.started, e.done, e.success = p.EpisodeID, seed, 0, true, false, false
	return e.result(text, nil, false, envs.Info{ActionValid: true, ActionEffective: true})
}

// step applies one action. A malformed action is the environment's
// business (an invalid step), not a protocol error.
func (e *episode) step(a Action) (Result, error) {
	res, err := e.env.Step(a.Message)
	if err != nil {
		return Result{}, fmt.Errorf("step: %w", err)
	}
	e.steps++
	e.done, e.success = res.Done, res.Info.Success
	r := res.Reward
	return e.result(res.Observation, &r, res.Done, res.Info)
}

func (e *episode) result(text string, reward *float64, done bool, info envs.Info) (Result, error) {
	obs := Observation{Text: text, Instruction: e.env.Instruction(), Actions: e.env.Actions(),
		Success: info.Success, ActionValid: info.ActionValid, ActionEffective: info.ActionEffective, Metrics: info.Metrics}
	if obs.Metrics == nil {
		obs.Metrics = map[string]float64{}
	}
	raw, err := json.Marshal(obs)
	if err != nil {
		return Result{}, fmt.Errorf("encoding the observation: %w", err)
	}
	return Result{Observation: raw, Reward: reward, Done: done}, nil
}

func (e *episode) state() State {
	return State{EpisodeID: e.id, StepCount: e.steps, Env: e.srv.name, Seed: e.seed, Done: e.done, Success: e.success}
}

// close releases an environment that holds resources.
func (e *episode) close() {
	if c, ok := e.env.(interface{ Close() error }); ok {
		c.Close()
	}
}

// configuredEnv builds an environment with the server's configuration
// overridden by a session's env_config (a JSON object of the env's keys).
func (s *Server) configuredEnv(raw json.RawMessage) (envs.Env, error) {
	var overlay yaml.Node
	if err := yaml.Unmarshal(raw, &overlay); err != nil {
		return nil, invalid("data.env_config", "%v", err)
	}
	merged, err := yamlpath.Merge(s.config, &overlay)
	if err != nil {
		return nil, invalid("data.env_config", "%v", err)
	}
	f, err := envs.NewFactory(s.name, merged)
	if err != nil {
		return nil, invalid("data.env_config", "%v", err)
	}
	env, err := f.New()
	if err != nil {
		return nil, invalid("data.env_config", "%v", err)
	}
	return env, nil
}

// isValidation reports whether err is a request that does not fit.
func isValidation(err error) bool {
	var v *validationError
	return errors.As(err, &v)
}
