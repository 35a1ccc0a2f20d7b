package main

// The decode row of eager launches against step graphs (gpucheck decode
// -graphs): the same decode, B sequences of a P-token prompt and N new
// tokens each, first with graphs off (what ARGRL_CUDA_GRAPHS=0 gives),
// then on (the GPU's default), switched in one process on one loaded
// model (cuda.Backend.SetGraphs), tokens/s of the decode steps of each
// and their ratio. The row also checks what the graphs promise: the same
// tokens and log-probs bit for bit, steps replayed, and at most one
// device→host copy per step (the backend's transfer counters).

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/argrl/argrl/kernels/cuda"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/rollout"
)

// decodeMode is one timed decode.
type decodeMode struct {
	rate   float64 // decode tokens/s (the steps after each sequence's first token)
	steps  int
	groups []*rollout.Group
	graphs cuda.GraphStats // during the decode
	xfer   cuda.Transfers  // during the decode
}

func timeDecode(m *model.Model, cb *cuda.Backend, graphs bool, B, P, N int) (decodeMode, error) {
	if err := cb.SetGraphs(graphs); err != nil {
		return decodeMode{}, err
	}
	e, err := rollout.New(m, rollout.Options{Batch: B, MaxLen: P + N})
	if err != nil {
		return decodeMode{}, err
	}
	defer e.Close()
	ps := make([]rollout.Prompt, B)
	for i, ids := range randomIDs(B, P, m.Config.VocabSize, uint64(B)+33) {
		ps[i] = rollout.Prompt{ID: fmt.Sprint(i), IDs: ids}
	}
	g0, x0 := cb.GraphStats(), cb.Transfers()
	gs, err := e.Generate(context.Background(), ps, rollout.Params{G: 1, Temperature: 0.6, TopP: 0.95, MaxNewTokens: N, Seed: 1})
	if err != nil {
		return decodeMode{}, err
	}
	g, x, st := cb.GraphStats(), cb.Transfers(), e.Stats()
	if len(gs) != B || st.NewTokens != B*N || st.Decode <= 0 {
		return decodeMode{}, fmt.Errorf("batch %d: %d groups, %d new tokens (want %d), decode time %v", B, len(gs), st.NewTokens, B*N, st.Decode)
	}
	g.Captures, g.Replays, g.Eager = g.Captures-g0.Captures, g.Replays-g0.Replays, g.Eager-g0.Eager
	x.HtoD, x.DtoH, x.Syncs = x.HtoD-x0.HtoD, x.DtoH-x0.DtoH, x.Syncs-x0.Syncs
	return decodeMode{rate: float64(st.NewTokens-st.Samples) / st.Decode.Seconds(), steps: st.DecodeSteps, groups: gs, graphs: g, xfer: x}, nil
}

// graphsRow measures batch B eager, then with graphs, and leaves graphs
// as they were.
func graphsRow(m *model.Model, cb *cuda.Backend, backend string, B, P, N int) (Row, error) {
	check := fmt.Sprintf("decode eager vs graphs, batch %d", B)
	if cb == nil {
		return Row{Check: check, Status: "skipped", Detail: backend + " is not the CUDA backend: no step graphs"}, nil
	}
	was := cb.StepGraphsOn()
	defer func() { _ = cb.SetGraphs(was) }() // turning off releases the graphs; on cannot fail
	if err := cb.SetGraphs(true); err != nil {
		return Row{}, err
	}
	if !cb.StepGraphsOn() {
		return Row{Check: check, Status: "skipped", Detail: "the driver lacks the graph or pinned-memory entry points (train gpu-info): decode runs eager"}, nil
	}
	eager, err := timeDecode(m, cb, false, B, P, N)
	if err != nil {
		return Row{}, fmt.Errorf("eager: %w", err)
	}
	graph, err := timeDecode(m, cb, true, B, P, N)
	if err != nil {
		return Row{}, fmt.Errorf("graphs: %w", err)
	}
	same := sameSamples(eager.groups, graph.groups)
	gs, x := graph.graphs, graph.xfer
	value := fmt.Sprintf("%.2f× (eager %.0f, graphs %.0f tokens/s)", graph.rate/eager.rate, eager.rate, graph.rate)
	if strings.HasPrefix(backend, "cuda-emu") {
		value = "emulator: times not meaningful; " + value
	}
	row := Row{Check: check, Status: "ok", Value: value,
		Detail: fmt.Sprintf("%s, prompt %d + %d new, %d steps each; ARGRL_CUDA_GRAPHS=0 then the default, switched in process; graphs: %d captures, %d replays, %d eager%s; per step %.2f device→host copies (eager %.2f), %.2f other waits, %.2f host→device copies; tokens and log-probs identical: %v",
			backend, P, N, graph.steps, gs.Captures, gs.Replays, gs.Eager, captureErr(gs), perStep(x.DtoH, graph.steps), perStep(eager.xfer.DtoH, eager.steps),
			perStep(x.Syncs, graph.steps), perStep(x.HtoD, graph.steps), same)}
	if !same || gs.Replays == 0 || x.DtoH > graph.steps {
		row.Status = "FAIL"
		return row, fmt.Errorf("%s: %s", check, row.Detail)
	}
	return row, nil
}

func captureErr(g cuda.GraphStats) string {
	if g.CaptureErr == "" {
		return ""
	}
	return " (last capture error: " + g.CaptureErr + ")"
}

func perStep(n, steps int) float64 { return float64(n) / float64(max(steps, 1)) }

// sameSamples reports whether a and b hold the same tokens and log-probs,
// bit for bit.
func sameSamples(a, b []*rollout.Group) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i].Samples) != len(b[i].Samples) {
			return false
		}
		for j, x := range a[i].Samples {
			y := b[i].Samples[j]
			if len(x.IDs) != len(y.IDs) || len(x.LogProbs) != len(y.LogProbs) {
				return false
			}
			for k := range x.IDs {
				if x.IDs[k] != y.IDs[k] || math.Float32bits(x.LogProbs[k]) != math.Float32bits(y.LogProbs[k]) {
					return false
				}
			}
		}
	}
	return true
}
