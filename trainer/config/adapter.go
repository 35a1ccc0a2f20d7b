package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/argrl/argrl/model"
)

// adapterShape is the part of a PEFT adapter_config.json that decides the
// LoRA keys.
type adapterShape struct {
	R       *int     `json:"r"`
	Alpha   *float64 `json:"lora_alpha"`
	Dropout *float64 `json:"lora_dropout"`
	Targets []string `json:"target_modules"`
}

// adoptAdapter makes a trainable init.adapter (init.merge: false) decide
// the LoRA keys: lora.r, lora.alpha, lora.dropout and lora.targets take
// the values of its adapter_config.json, as PEFT does when it loads an
// adapter. A key a source set (file, ARGRL_*, --set) to another value is
// an error naming both values. With init.merge: true the adapter is merged
// into the base and lora.* shape the fresh adapter RL trains, so nothing
// is adopted; GRPO and PPO train without dropout, so they adopt no
// lora.dropout. An adapter directory that does not exist yet is left to the
// run's setup, which names it; the rest of adapter_config.json (its
// peft_type, bias, ...) is checked when the adapter is loaded.
func (c *Config) adoptAdapter() error {
	dir := c.Init.Adapter
	if dir == "" || c.Init.Merge || !c.LoRA.Enabled {
		return nil
	}
	path := filepath.Join(dir, model.AdapterConfigName)
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("key \"init.adapter\": %w", err)
	}
	var a adapterShape
	if err := json.Unmarshal(raw, &a); err != nil {
		return fmt.Errorf("key \"init.adapter\": %s: %w", path, err)
	}
	var errs []string
	adopt := func(key, jsonKey string, same bool, cfgVal, adVal any, set func()) {
		if o, given := c.origins[key]; given && !same {
			errs = append(errs, fmt.Sprintf("key %q is %v (%s) but the adapter init.adapter trains has %s %v (%s); the adapter decides: drop the key or make it %v",
				key, cfgVal, o, jsonKey, adVal, path, adVal))
			return
		}
		set()
	}
	if a.R != nil {
		adopt("lora.r", "r", *a.R == c.LoRA.R, c.LoRA.R, *a.R, func() { c.LoRA.R = *a.R })
	}
	if a.Alpha != nil {
		adopt("lora.alpha", "lora_alpha", *a.Alpha == c.LoRA.Alpha, c.LoRA.Alpha, *a.Alpha, func() { c.LoRA.Alpha = *a.Alpha })
	}
	if a.Dropout != nil && c.Algo != "grpo" && c.Algo != "ppo" { // RL trains without dropout (ρ = 1 on-policy)
		adopt("lora.dropout", "lora_dropout", *a.Dropout == c.LoRA.Dropout, c.LoRA.Dropout, *a.Dropout, func() { c.LoRA.Dropout = *a.Dropout })
	}
	if len(a.Targets) > 0 {
		short := shortTargets(a.Targets)
		adopt("lora.targets", "target_modules", slices.Equal(short, shortTargets(c.LoRA.Targets)),
			"["+strings.Join(c.LoRA.Targets, ", ")+"]", "["+strings.Join(short, ", ")+"]", func() { c.LoRA.Targets = short })
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// shortTargets is targets as lora.targets names them (q, k, …; "q_proj" →
// "q"), in model.AllTargets order; a name argrl does not know is kept as
// given, for Validate (or the adapter's loader) to refuse.
func shortTargets(targets []string) []string {
	var out []string
	for _, t := range model.AllTargets {
		for _, u := range targets {
			if LoRATarget(u) == t {
				out = append(out, strings.TrimSuffix(t, "_proj"))
				break
			}
		}
	}
	for _, u := range targets {
		if !slices.Contains(model.AllTargets, LoRATarget(u)) {
			out = append(out, u)
		}
	}
	return out
}
