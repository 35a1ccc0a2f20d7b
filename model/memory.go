package model

// Memory of a token budget: the training graph of a micro-batch of n
// tokens, planned (never allocated) before training starts, against the
// memory the backend has free.

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/argrl/argrl/kernels/graph"
)

// PlanTokens is the memory plan of the training graph of a micro-batch of
// n tokens: one packed row of them with Options.Pack, else rows of MaxLen.
// The graph is built and planned; nothing is allocated on the backend.
func (m *Model) PlanTokens(n int) (graph.Stats, error) {
	if len(m.trainable) == 0 {
		return graph.Stats{}, fmt.Errorf("model: PlanTokens: nothing to train")
	}
	if n <= 0 {
		return graph.Stats{}, fmt.Errorf("model: PlanTokens: %d tokens", n)
	}
	B, T := 1, packRound(n, m.opt.TBucket)
	if !m.opt.Pack {
		B, T = (n+m.maxLen-1)/m.maxLen, m.maxLen
	}
	mg, err := m.build(B, T)
	if err != nil {
		return graph.Stats{}, fmt.Errorf("model: plan %d tokens: %w", n, err)
	}
	st, err := graph.Plan(mg.g, m.execConfig(mg, true))
	if err != nil {
		return graph.Stats{}, fmt.Errorf("model: plan %d tokens: %w", n, err)
	}
	return st, nil
}

// PlannedBytes is the memory a plan's executor holds: its activations,
// work space and stash, and its pinned buffers.
func PlannedBytes(st graph.Stats) int64 { return st.ActivationBytes() + 4*st.PinnedElems }

// FreeMemory is the memory the backend can still allocate, in bytes: the
// device's free memory (a backend with DeviceMemory), or the host's
// MemAvailable (/proc/meminfo) for the CPU. ok is false where neither is
// known.
func (m *Model) FreeMemory() (free int64, ok bool) {
	if d, is := m.be.(interface {
		DeviceMemory() (free, total int64, err error)
	}); is {
		f, _, err := d.DeviceMemory()
		return f, err == nil
	}
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, found := strings.Cut(sc.Text(), ":")
		if !found || k != "MemAvailable" {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		return kb << 10, err == nil
	}
	return 0, false
}

// CheckTokens plans the training graph of a micro-batch of n tokens
// (PlanTokens) and fails, allocating nothing, when it needs more memory
// than the backend has free (FreeMemory; no check where that is unknown).
func (m *Model) CheckTokens(n int) error {
	st, err := m.PlanTokens(n)
	if err != nil {
		return err
	}
	need := PlannedBytes(st)
	if free, ok := m.FreeMemory(); ok && need > free {
		return fmt.Errorf("a micro-batch of %d tokens plans %.2f GiB (activations %.2f GiB), more than the %.2f GiB free",
			n, float64(need)/(1<<30), float64(st.ActivationBytes())/(1<<30), float64(free)/(1<<30))
	}
	return nil
}
