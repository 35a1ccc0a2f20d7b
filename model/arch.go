package model

import (
	"fmt"
	"strings"

	"github.com/argrl/argrl/internal/registry"
)

// Arch is one decoder architecture, registered under its Hugging Face
// model_type by the file that implements it (qwen2.go, qwen3.go, llama.go).
type Arch interface {
	// CheckConfig rejects config values the architecture does not
	// implement, naming the key, and fills fields the architecture fixes
	// (qwen2 always has q/k/v biases).
	CheckConfig(c *Config) error
	// NewWeights returns the architecture's empty weight struct for c, with
	// c.NumLayers layers allocated (Open checks the count against the
	// checkpoint first). Open places its tagged tensors on the backend.
	NewWeights(c *Config) Weights
}

var archs = registry.New[Arch]()

// Register makes an architecture available under a config.json model_type.
// Architectures call it from init. Registering a name twice keeps the later one.
func Register(name string, a Arch) { archs.Register(name, a) }

// ArchNames lists the registered model types, sorted.
func ArchNames() []string { return archs.Names() }

// LookupArch returns the architecture registered for model_type name.
func LookupArch(name string) (Arch, error) { return lookupArch(name) }

func lookupArch(name string) (Arch, error) {
	a, ok := archs.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("unsupported model_type %q (supported: %s)", name, strings.Join(ArchNames(), ", "))
	}
	return a, nil
}
