package trainer

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argrl/argrl/trainer/config"
)

// A start that fails, on a typo in a path (found before the run directory
// is made) or on a bad input found later (a malformed record, read after
// the directory and its lock exist), leaves nothing behind: no run
// directory, no parents made for it, and in a directory that was there
// before, no .lock, checkpoints/, config.yaml or metrics.jsonl.
func TestFailedStartLeavesNothing(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"id\": \"a\", \"messages\": [\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		set  func(c *config.Config)
		want string
	}{
		{"data.train typo", func(c *config.Config) { c.Data.Train += ".typo" }, `key "data.train"`},
		{"data.val typo", func(c *config.Config) { c.Data.Val += ".typo" }, `key "data.val"`},
		{"model.path typo", func(c *config.Config) { c.Model.Path += "-typo" }, `key "model.path"`},
		{"bad record", func(c *config.Config) { c.Data.Train = bad }, `key "data.train"`},
	}
	run := func(cfg config.Config) error {
		if cfg.Algo == "sft" {
			_, err := SFT(context.Background(), cfg, SFTOptions{Log: io.Discard})
			return err
		}
		_, err := GRPO(context.Background(), cfg, RLOptions{Log: io.Discard})
		return err
	}
	base := t.TempDir()
	for _, c := range cases {
		for _, name := range []string{"sft-tiny", "grpo-tiny"} {
			cfg := tinyShipped(t, name)
			c.set(&cfg)
			cfg.Run.Dir = filepath.Join(base, c.name, name, "run")
			err := run(cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s, %s: %v, want an error naming %s", c.name, name, err, c.want)
			}
		}
		if _, err := os.Stat(filepath.Join(base, c.name)); !os.IsNotExist(err) {
			t.Errorf("%s: the failed start left %s behind (%v)", c.name, filepath.Join(base, c.name), err)
		}
	}
	// A directory that was there before stays, as it was.
	cfg := tinyShipped(t, "sft-tiny")
	cfg.Data.Train = bad
	if err := run(cfg); err == nil {
		t.Fatal("a malformed record: no error")
	}
	if ents, err := os.ReadDir(cfg.Run.Dir); err != nil || len(ents) != 0 {
		t.Errorf("the failed start left %v in %s (%v)", ents, cfg.Run.Dir, err)
	}
}
