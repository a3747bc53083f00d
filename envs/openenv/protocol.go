// Package openenv speaks OpenEnv's environment protocol (meta-pytorch/OpenEnv,
// src/openenv/core/env_server): a Server that puts any registered agentrl
// environment behind OpenEnv's HTTP routes and WebSocket sessions, so that
// Python trainers (TRL, SkyRL, ART, verifiers, rLLM) can train on it, and a
// client, the "openenv" environment, that plays an episode on any OpenEnv
// server as an envs.Env, so that agentrl's rollout engine and trainer can
// use remote environments like local ones.
//
// The wire format follows the reference's pydantic models (types.py):
//
//	POST /reset   {seed?, episode_id?, …extra}        → {observation, reward, done}
//	POST /step    {action: {…}, timeout_s?, request_id?, …extra} → {observation, reward, done}
//	GET  /state   → {episode_id, step_count, …extra}
//	GET  /schema  → {action, observation, state}  (JSON Schemas)
//	GET  /health  → {status: "healthy"}
//	GET  /metadata → {name, description, readme_content?, version?, author?, documentation_url?}
//	WS   /ws      one session (one environment) per connection:
//	  client: {"type":"reset","data":{…}} | {"type":"step","data":{…action}} | {"type":"state"} | {"type":"close"}
//	  server: {"type":"observation","data":{observation, reward, done}} | {"type":"state","data":{…}}
//	          | {"type":"error","data":{"message", "code", …}}
//
// As in the reference, the HTTP /reset, /step and /state routes run on a
// fresh environment each time (one-shot, no session); episodes are played
// over the WebSocket. Actions and observations reject unknown fields;
// reset parameters the environment does not know are ignored (the
// reference passes only the keyword arguments reset accepts).
//
// agentrl's models: the action is {"message": text} (the field OpenEnv's
// text environments use), with the text the agent wrote; the observation
// carries the rendered text, the task instruction, the action vocabulary
// and the step's outcome (success, action_valid, action_effective, metrics).
// Reset accepts, besides seed and episode_id, a level (text for
// environments that load levels), a task (split and index, see Splits) and
// env_config (settings overriding the served configuration for this
// session).
package openenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// Error codes of the WebSocket protocol (the reference's WSErrorCode).
const (
	CodeInvalidJSON     = "INVALID_JSON"
	CodeUnknownType     = "UNKNOWN_TYPE"
	CodeValidation      = "VALIDATION_ERROR"
	CodeExecution       = "EXECUTION_ERROR"
	CodeCapacityReached = "CAPACITY_REACHED"
	CodeFactory         = "FACTORY_ERROR"
	CodeSession         = "SESSION_ERROR"
)

// Action is agentrl's action model: the text the agent wrote.
type Action struct {
	// Message is the action as the agent wrote it ("Up", "search[red
	// shoes]", an equation, a program).
	Message string `json:"message" required:"true" doc:"The action text, as the agent wrote it"`
	// Metadata is the base Action's free-form metadata (ignored).
	Metadata map[string]any `json:"metadata,omitempty" doc:"Additional metadata for the action"`
}

// Observation is agentrl's observation model. On the wire, done, reward
// and metadata sit beside it (Result), as the reference's
// serialize_observation moves them.
type Observation struct {
	// Text is the rendered observation.
	Text string `json:"text" doc:"The environment's observation, as text"`
	// Instruction is the task description shown to the agent once, before
	// the first observation.
	Instruction string `json:"instruction" doc:"The task description, shown before the first observation"`
	// Actions is the action vocabulary; null for free-form environments.
	Actions []string `json:"actions" doc:"The action vocabulary; null when actions are free-form text"`
	// Success reports that the task is solved.
	Success bool `json:"success" doc:"Whether the task is solved in the current state"`
	// ActionValid and ActionEffective describe the last action (both true
	// after a reset).
	ActionValid     bool `json:"action_valid" doc:"Whether the last action was understood and allowed"`
	ActionEffective bool `json:"action_effective" doc:"Whether the last action changed the state"`
	// Metrics are environment-specific numbers of the last step.
	Metrics map[string]float64 `json:"metrics" doc:"Environment-specific numbers of the last step"`
}

// observationModel is the whole observation model as /schema describes it:
// the reference's base fields and agentrl's.
type observationModel struct {
	Done     bool           `json:"done" doc:"Whether the episode has terminated"`
	Reward   *float64       `json:"reward" doc:"Reward signal from the last action"`
	Metadata map[string]any `json:"metadata" doc:"Additional metadata for the observation"`
	Observation
}

// Result is what reset and step answer, over HTTP and in a WebSocket
// observation message.
type Result struct {
	Observation json.RawMessage `json:"observation"`
	// Reward is null after a reset.
	Reward *float64 `json:"reward"`
	Done   bool     `json:"done"`
}

// State is agentrl's state model: the reference's episode_id and
// step_count, and what else identifies the episode.
type State struct {
	EpisodeID *string `json:"episode_id" doc:"Unique identifier for the current episode"`
	StepCount int     `json:"step_count" doc:"Number of steps taken in the current episode"`
	// Env is the environment's registered name.
	Env string `json:"env" doc:"The agentrl environment"`
	// Seed is the seed of the episode (null before a reset or for a level).
	Seed *uint64 `json:"seed" doc:"The episode's seed"`
	// Done and Success describe the episode so far.
	Done    bool `json:"done" doc:"Whether the episode has ended"`
	Success bool `json:"success" doc:"Whether the task is solved"`
}

// resetParams are the reset parameters agentrl reads. seed and episode_id
// are the reference's; the others are agentrl's.
type resetParams struct {
	Seed      *uint64
	EpisodeID *string
	Level     *string
	Split     *string
	Index     *int
	EnvConfig json.RawMessage
}

// maxIDLength is the reference's max_length for episode_id and request_id.
const maxIDLength = 255

// validationError is a request that does not fit the models; the message
// names the field, like pydantic's error list.
type validationError struct {
	loc, msg string
}

func (e *validationError) Error() string { return e.loc + ": " + e.msg }

// detail is a pydantic-style error list for HTTP 422 bodies and the
// WebSocket "errors" field.
func (e *validationError) detail() []map[string]any {
	return []map[string]any{{"loc": strings.Split(e.loc, "."), "msg": e.msg, "type": "value_error"}}
}

func invalid(loc, format string, args ...any) error {
	return &validationError{loc: loc, msg: fmt.Sprintf(format, args...)}
}

// decodeObject parses data as one JSON object into its raw members. A
// second value after the object is an error.
func decodeObject(data []byte, loc string) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, invalid(loc, "must be an object, not null")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, invalid(loc, "unexpected data after the object")
	}
	return m, nil
}

// parseAction decodes an action object strictly: message required and a
// string, metadata an object, nothing else.
func parseAction(raw json.RawMessage, loc string) (Action, error) {
	var a Action
	m, err := decodeObject(raw, loc)
	if err != nil {
		var v *validationError
		if errors.As(err, &v) {
			return a, err
		}
		return a, invalid(loc, "must be an object: %v", err)
	}
	for k, v := range m {
		switch k {
		case "message":
			if err := json.Unmarshal(v, &a.Message); err != nil || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
				return a, invalid(loc+".message", "must be a string")
			}
		case "metadata":
			if err := json.Unmarshal(v, &a.Metadata); err != nil {
				return a, invalid(loc+".metadata", "must be an object")
			}
		default:
			return a, invalid(loc+"."+k, "extra inputs are not permitted")
		}
	}
	if _, ok := m["message"]; !ok {
		return a, invalid(loc+".message", "field required")
	}
	return a, nil
}

// parseReset reads the reset parameters agentrl knows from a reset body
// or a WebSocket reset message's data; other keys are ignored.
func parseReset(m map[string]json.RawMessage, loc string) (resetParams, error) {
	var p resetParams
	isNull := func(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }
	if v, ok := m["seed"]; ok && !isNull(v) {
		var f json.Number
		if err := json.Unmarshal(v, &f); err != nil {
			return p, invalid(loc+".seed", "must be an integer")
		}
		s := f.String()
		if strings.HasPrefix(s, "-") {
			return p, invalid(loc+".seed", "must be greater than or equal to 0")
		}
		var seed uint64
		if _, err := fmt.Sscan(s, &seed); err != nil || strings.ContainsAny(s, ".eE") {
			return p, invalid(loc+".seed", "must be an integer below 2^64")
		}
		p.Seed = &seed
	}
	if v, ok := m["episode_id"]; ok && !isNull(v) {
		var id string
		if err := json.Unmarshal(v, &id); err != nil {
			return p, invalid(loc+".episode_id", "must be a string")
		}
		if len([]rune(id)) > maxIDLength {
			return p, invalid(loc+".episode_id", "must have at most %d characters", maxIDLength)
		}
		p.EpisodeID = &id
	}
	if v, ok := m["level"]; ok && !isNull(v) {
		var level string
		if err := json.Unmarshal(v, &level); err != nil {
			return p, invalid(loc+".level", "must be a string")
		}
		p.Level = &level
	}
	if v, ok := m["split"]; ok && !isNull(v) {
		var split string
		if err := json.Unmarshal(v, &split); err != nil {
			return p, invalid(loc+".split", "must be a string")
		}
		p.Split = &split
	}
	if v, ok := m["index"]; ok && !isNull(v) {
		var f float64
		if err := json.Unmarshal(v, &f); err != nil || f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
			return p, invalid(loc+".index", "must be a non-negative integer")
		}
		i := int(f)
		p.Index = &i
	}
	if (p.Split == nil) != (p.Index == nil) {
		return p, invalid(loc, "split and index go together")
	}
	if p.Split != nil && (p.Seed != nil || p.Level != nil) {
		return p, invalid(loc, "a task (split and index) names its own seed; leave seed and level out")
	}
	if v, ok := m["env_config"]; ok && !isNull(v) {
		var obj map[string]any
		if err := json.Unmarshal(v, &obj); err != nil {
			return p, invalid(loc+".env_config", "must be an object")
		}
		p.EnvConfig = v
	}
	return p, nil
}
