package rollout

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/argrl/argrl/kernels/cuda"
	"github.com/argrl/argrl/model"
)

// TestDeviceDrawsOneCopyPerStep: on cuda-emu with decode graphs on, the
// engine draws on the device (kernels.DeviceDraws): every step waits for
// the device once, by one device→host copy of its ids and log-probs (or,
// a step that draws nothing, one wait), counted by the backend's transfer
// counters; and the samples are bit-identical to drawing with Sample then
// LogProbs and CopyOut (hostDrawer, the path of backends without device
// draws), which takes more copies per step.
func TestDeviceDrawsOneCopyPerStep(t *testing.T) {
	if testing.Short() {
		t.Skip("cuda-emu: -short")
	}
	be, err := cuda.NewEmulated(cuda.EmuOptions{Options: cuda.Options{Graphs: true}})
	if err != nil {
		t.Skipf("cuda-emu: %v", err)
	}
	defer be.Close()
	dir := filepath.Join(fixtures, "qwen2-f32")
	m, err := model.Open(dir, be, model.Options{Adapter: filepath.Join(dir, "adapter")})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	prompts := randomPrompts(3, 4, 2, 30, m.Config.VocabSize)
	p := Params{G: 3, Temperature: 1, TopP: 0.9, MaxNewTokens: 12, StopIDs: stopIDs(m), Seed: 9}
	run := func(host bool) ([]*Group, Stats, cuda.Transfers, cuda.GraphStats) {
		e := newEngine(t, m, Options{Batch: 8, MaxTokens: 16})
		if _, ok := e.draws.(deviceDrawer); !ok {
			t.Fatalf("the engine draws with %T on %s; want the device's draws", e.draws, be.Name())
		}
		if host {
			e.draws = &hostDrawer{be: be}
		}
		// the first call builds the cache; the second, measured, reuses it
		if _, err := e.Generate(context.Background(), prompts, p); err != nil {
			t.Fatal(err)
		}
		st0, x0, g0 := e.Stats(), be.Transfers(), be.GraphStats()
		out, err := e.Generate(context.Background(), prompts, p)
		if err != nil {
			t.Fatal(err)
		}
		st, x, g := e.Stats(), be.Transfers(), be.GraphStats()
		st.DecodeSteps -= st0.DecodeSteps
		st.NewTokens -= st0.NewTokens
		x.HtoD, x.DtoH, x.Syncs = x.HtoD-x0.HtoD, x.DtoH-x0.DtoH, x.Syncs-x0.Syncs
		g.Captures, g.Replays, g.Eager = g.Captures-g0.Captures, g.Replays-g0.Replays, g.Eager-g0.Eager
		return out, st, x, g
	}
	dev, st, x, g := run(false)
	t.Logf("device draws: %d steps, %d tokens: %d device→host copies, %d other waits, %d host→device copies; graphs: %d captures, %d replays, %d eager",
		st.DecodeSteps, st.NewTokens, x.DtoH, x.Syncs, x.HtoD, g.Captures, g.Replays, g.Eager)
	if x.DtoH+x.Syncs != st.DecodeSteps || x.DtoH == 0 {
		t.Errorf("%d steps: %d device→host copies and %d other waits; want one of the two per step", st.DecodeSteps, x.DtoH, x.Syncs)
	}
	if g.Replays == 0 {
		t.Errorf("no decode step replayed a graph (%+v)", g)
	}
	host, hst, hx, _ := run(true)
	t.Logf("Sample, LogProbs, CopyOut: %d steps: %d device→host copies, %d other waits, %d host→device copies", hst.DecodeSteps, hx.DtoH, hx.Syncs, hx.HtoD)
	if hx.DtoH <= hst.DecodeSteps {
		t.Errorf("Sample, LogProbs and CopyOut took %d device→host copies in %d steps; want more than one per step (the counter does not count)", hx.DtoH, hst.DecodeSteps)
	}
	for i := range host {
		for j, a := range host[i].Samples {
			b := dev[i].Samples[j]
			if len(a.IDs) != len(b.IDs) || len(a.LogProbs) != len(b.LogProbs) {
				t.Fatalf("prompt %d sample %d: %d tokens with Sample/LogProbs, %d with device draws", i, j, len(a.IDs), len(b.IDs))
			}
			for k := range a.IDs {
				if a.IDs[k] != b.IDs[k] || math.Float32bits(a.LogProbs[k]) != math.Float32bits(b.LogProbs[k]) {
					t.Fatalf("prompt %d sample %d token %d: Sample/LogProbs %d (%v), device draws %d (%v)",
						i, j, k, a.IDs[k], a.LogProbs[k], b.IDs[k], b.LogProbs[k])
				}
			}
		}
	}
}
