package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A malformed config fails the training commands before any work, with an
// error naming the file, line and key (main turns the error into exit 1).
func TestMalformedConfigNamesKey(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ body, want string }{
		{"algo: grpo\nlora:\n  rank: 8\n", `bad.yaml:3: unknown key "lora.rank"`},
		{"optim:\n  lr: fast\n", `bad.yaml:2: key "optim.lr"`},
		{"token_weight:\n  beta: -1\n", `"token_weight.beta"`},
		{"reward:\n  name: rm7\n", `"reward.name": "rm7" is not one of rm1, rm2, rm3, decomposed, binary, r2if`},
	}
	for _, cmd := range []string{"sft", "grpo", "ppo"} {
		for i, tc := range cases {
			p := filepath.Join(dir, "bad.yaml")
			if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			root.SetArgs([]string{cmd, "--config", p})
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s case %d: got %v, want an error containing %q", cmd, i, err, tc.want)
			}
		}
	}
}
