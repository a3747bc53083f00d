package envs

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/agentrl/agentrl/internal/yamlpath"
)

// Validator is implemented by config types that check their own values.
// Validate is called after decoding; its error should name the offending key
// and the allowed values.
type Validator interface {
	Validate() error
}

// Registration describes how to build one environment kind. C is its config
// type: a struct with yaml tags, decoded strictly (unknown keys are errors).
type Registration[C any] struct {
	// Description is a one-line summary shown by `trainer play -list`.
	Description string
	// Default returns the configuration used for keys the YAML leaves out.
	Default func() C
	// New builds one environment from a decoded, validated config.
	New func(cfg C) (Env, error)
}

// Factory builds environments of one registered kind with one resolved
// configuration. It is safe for concurrent use.
type Factory struct {
	name   string
	config any
	build  func() (Env, error)
}

// Name is the registered environment name.
func (f *Factory) Name() string { return f.name }

// Config returns the resolved configuration (a value of the kind's config type).
func (f *Factory) Config() any { return f.config }

// New builds a fresh environment.
func (f *Factory) New() (Env, error) { return f.build() }

type entry struct {
	description string
	factory     func(node *yaml.Node) (*Factory, error)
}

var (
	registryMu sync.RWMutex
	registry   = map[string]entry{}
)

// Register adds an environment kind under name. It returns an error if the
// name is empty or taken, or the registration is incomplete.
func Register[C any](name string, r Registration[C]) error {
	if name == "" || strings.ContainsAny(name, " \t\n") {
		return fmt.Errorf("envs: invalid environment name %q", name)
	}
	if r.Default == nil || r.New == nil {
		return fmt.Errorf("envs: registration of %q needs Default and New", name)
	}
	factory := func(node *yaml.Node) (*Factory, error) {
		cfg := r.Default()
		if node != nil {
			if err := yamlpath.DecodeStrict(node, &cfg); err != nil {
				return nil, fmt.Errorf("env %q config: %w", name, err)
			}
		}
		if v, ok := any(&cfg).(Validator); ok {
			if err := v.Validate(); err != nil {
				return nil, fmt.Errorf("env %q config: %w", name, err)
			}
		}
		// Build one environment now so that configuration errors surface
		// here rather than in the middle of a rollout.
		if _, err := r.New(cfg); err != nil {
			return nil, fmt.Errorf("env %q: %w", name, err)
		}
		return &Factory{name: name, config: cfg, build: func() (Env, error) { return r.New(cfg) }}, nil
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		return fmt.Errorf("envs: environment %q registered twice", name)
	}
	registry[name] = entry{description: r.Description, factory: factory}
	return nil
}

// MustRegister is Register for package init functions: it panics on error,
// which can only be a programming mistake.
func MustRegister[C any](name string, r Registration[C]) {
	if err := Register(name, r); err != nil {
		panic(err)
	}
}

// Names lists the registered environment names in sorted order.
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Description returns the one-line description of a registered environment.
func Description(name string) string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return registry[name].description
}

// NewFactory resolves the configuration of the named environment from a YAML
// mapping (nil or empty for all defaults). Unknown keys and invalid values
// are errors that name the key.
func NewFactory(name string, config *yaml.Node) (*Factory, error) {
	registryMu.RLock()
	e, ok := registry[name]
	registryMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown environment %q (registered: %s)", name, strings.Join(Names(), ", "))
	}
	return e.factory(config)
}

// NewFactoryYAML is NewFactory for a YAML document given as bytes.
func NewFactoryYAML(name string, config []byte) (*Factory, error) {
	if len(bytes.TrimSpace(config)) == 0 {
		return NewFactory(name, nil)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(config, &doc); err != nil {
		return nil, fmt.Errorf("env %q config: %w", name, err)
	}
	return NewFactory(name, &doc)
}
