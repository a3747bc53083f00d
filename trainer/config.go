package main

import (
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/internal/yamlpath"
)

// overrides collects repeated `-set key=value` flags.
type overrides []string

func (o *overrides) String() string { return fmt.Sprint(*o) }

func (o *overrides) Set(s string) error {
	if _, _, err := yamlpath.ParseOverride(s); err != nil {
		return err
	}
	*o = append(*o, s)
	return nil
}

// loadConfigDoc reads a YAML config file (or starts from an empty document
// when path is "") and applies the overrides, each relative to prefix
// ("" for the whole document, "env.config" for an environment's keys).
func loadConfigDoc(path string, sets overrides, prefix string) (*yaml.Node, error) {
	doc := &yaml.Node{Kind: yaml.DocumentNode}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if err := yaml.Unmarshal(data, doc); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if doc.Kind == 0 {
			doc.Kind = yaml.DocumentNode
		}
	}
	for _, s := range sets {
		key, value, _ := yamlpath.ParseOverride(s)
		if prefix != "" {
			key = prefix + "." + key
		}
		if err := yamlpath.Set(doc, key, value); err != nil {
			return nil, usageErrorf("-set %s: %v", s, err)
		}
	}
	return doc, nil
}

// envFactory resolves the environment named at env.name in a run config,
// configured by env.config. name, when not empty, overrides env.name.
func envFactory(doc *yaml.Node, name string) (*envs.Factory, error) {
	if name == "" {
		if n := yamlpath.Get(doc, "env.name"); n != nil {
			name = n.Value
		}
	}
	if name == "" {
		return nil, usageErrorf("no environment: give -env NAME or a config with env.name (registered: %v)", envs.Names())
	}
	return envs.NewFactory(name, yamlpath.Get(doc, "env.config"))
}
