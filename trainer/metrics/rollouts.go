package metrics

// RUN/rollouts/step-NNNNNN.jsonl: a bounded sample of one RL step's
// rollouts, written by the GRPO and PPO recipes at every step that
// evaluates (each eval_every step and the last step), for the run report
// (report.go). One JSON object per group (one prompt and its samples):
//
//	{"step":50,"group":0,"prompt_id":"es-0042","lang":"es","prompt":"…","gold":[…],
//	 "samples":[{"index":0,"text":"…","offsets":[[0,2],[2,5],…],"weights":[1,3,…],
//	             "spans":[[14,20]],"reward":2.5,"gate":"fcm","parts":{…},"levels":{…},
//	             "adv":0.8,"finish":"stop"}, …]}
//
// offsets are the byte ranges of the response text each token produced,
// weights the β token weights w_t (docs/contracts.md §5) of those tokens,
// spans the argument values' byte ranges the reward's parser found, adv
// the rollout's advantage before β (GRPO: the group z-score A_i; PPO: the
// token mean of the whitened GAE). At most MaxRolloutGroups groups and
// MaxRolloutSamples samples per group are kept, so a file stays in the
// hundreds of kilobytes for 512-token responses. The file is written to a
// temporary name, fsynced and renamed into place, so a reader never sees
// half of one.

import (
	"github.com/argrl/argrl/internal/atomicfile"

	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// RolloutsDir is the rollout samples' directory inside RUN/.
const RolloutsDir = "rollouts"

// The bounds of one rollouts file.
const (
	MaxRolloutGroups  = 4
	MaxRolloutSamples = 8
	maxPromptBytes    = 2000
)

// RolloutGroup is one prompt of a step and a sample of its rollouts.
type RolloutGroup struct {
	Step     int             `json:"step"`
	Group    int             `json:"group"`
	PromptID string          `json:"prompt_id"`
	Lang     string          `json:"lang,omitempty"`
	Prompt   string          `json:"prompt,omitempty"` // the last user message
	Gold     json.RawMessage `json:"gold,omitempty"`   // the gold calls
	Samples  []RolloutSample `json:"samples"`
}

// RolloutSample is one rollout: its text, tokens, reward and β weights.
type RolloutSample struct {
	Index   int                `json:"index"`
	Text    string             `json:"text"`
	Offsets [][2]int           `json:"offsets"`
	Weights []float32          `json:"weights"`
	Spans   [][2]int           `json:"spans,omitempty"`
	Reward  float64            `json:"reward"`
	Gate    string             `json:"gate,omitempty"`
	Parts   map[string]float64 `json:"parts,omitempty"`
	Levels  map[string]bool    `json:"levels,omitempty"`
	Adv     float64            `json:"adv"`
	Finish  string             `json:"finish,omitempty"`
}

// RolloutsPath is RUN/rollouts/step-NNNNNN.jsonl.
func RolloutsPath(runDir string, step int) string {
	return filepath.Join(runDir, RolloutsDir, fmt.Sprintf("step-%06d.jsonl", step))
}

// WriteRollouts writes the groups of step (cut to the bounds above) to
// RolloutsPath atomically and returns the path.
func WriteRollouts(runDir string, step int, groups []RolloutGroup) (string, error) {
	path := RolloutsPath(runDir, step)
	if len(groups) > MaxRolloutGroups {
		groups = groups[:MaxRolloutGroups]
	}
	var b bytes.Buffer
	for _, g := range groups {
		g.Step = step
		if len(g.Samples) > MaxRolloutSamples {
			g.Samples = g.Samples[:MaxRolloutSamples]
		}
		g.Prompt = cutUTF8(g.Prompt, maxPromptBytes)
		line, err := json.Marshal(g)
		if err != nil {
			return "", fmt.Errorf("rollouts: step %d group %d: %w", step, g.Group, err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.MkdirAll(filepath.Dir(path), atomicfile.DirMode); err != nil {
		return "", fmt.Errorf("rollouts: %w", err)
	}
	if err := atomicfile.WriteFile(path, b.Bytes()); err != nil {
		return "", fmt.Errorf("rollouts: %w", err)
	}
	return path, nil
}

// cutUTF8 cuts s to at most n bytes on a rune boundary, marking the cut.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// ReadRollouts parses a rollouts file; a malformed line is an error naming
// file:line.
func ReadRollouts(path string) (_ []RolloutGroup, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("rollouts: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("rollouts: %w", cerr)
		}
	}()
	var out []RolloutGroup
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var g RolloutGroup
		if err := json.Unmarshal(text, &g); err != nil {
			return nil, fmt.Errorf("rollouts: %s:%d: %w", path, line, err)
		}
		out = append(out, g)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("rollouts: %s: %w", path, err)
	}
	return out, nil
}

// RolloutSteps lists the steps that have a rollouts file in runDir,
// ascending (none: an empty list, no error).
func RolloutSteps(runDir string) ([]int, error) {
	ents, err := os.ReadDir(filepath.Join(runDir, RolloutsDir))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("rollouts: %w", err)
	}
	var steps []int
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasPrefix(name, "step-") || !strings.HasSuffix(name, ".jsonl") {
			continue
		}
		if s, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, "step-"), ".jsonl")); err == nil {
			steps = append(steps, s)
		}
	}
	sort.Ints(steps)
	return steps, nil
}
