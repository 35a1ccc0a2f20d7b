package rollout

// A step's draws: every token a step draws (decode rows, and the G first
// tokens of each prompt whose prefill it completes) is queued into a slot,
// then all come back together. On a backend with kernels.DeviceDraws (the
// CUDA backend) the sampling and the log-probs run on the device and the
// step's ids and log-probs come back in one device→host copy; elsewhere
// each draw is Sample then LogProbs into a device vector, read back by one
// CopyOut. Both run the same ops on the same rows as drawing them one call
// at a time, so the tokens and log-probs are those.

import (
	"fmt"

	"github.com/argrl/argrl/kernels"
)

// drawer queues a step's draws into slots and brings slots [0, len(ids))
// back; fetch waits for the device and returns its first error.
type drawer interface {
	draw(at int, logits kernels.Buffer, u []float32, N, V int, p kernels.SampleParams)
	fetch(ids []int32, lp []float32) error
	close()
}

func newDrawer(be kernels.Backend) drawer {
	if dd, ok := be.(kernels.DeviceDraws); ok {
		return deviceDrawer{dd}
	}
	return &hostDrawer{be: be}
}

type deviceDrawer struct{ dd kernels.DeviceDraws }

func (d deviceDrawer) draw(at int, logits kernels.Buffer, u []float32, N, V int, p kernels.SampleParams) {
	d.dd.DrawRows(at, logits, u, N, V, p)
}
func (d deviceDrawer) fetch(ids []int32, lp []float32) error { return d.dd.FetchDraws(ids, lp) }
func (d deviceDrawer) close()                                {}

// hostDrawer draws with Sample (ids on the host) and LogProbs into lp.
type hostDrawer struct {
	be      kernels.Backend
	ids     []int32
	lp, lse kernels.Buffer // [len(ids)]
}

func (h *hostDrawer) draw(at int, logits kernels.Buffer, u []float32, N, V int, p kernels.SampleParams) {
	if at+N > len(h.ids) {
		h.grow(at + N)
	}
	ids := h.ids[at : at+N]
	h.be.Sample(ids, logits, u, N, V, p)
	h.be.LogProbs(h.be.View(h.lp, at, N), h.be.View(h.lse, at, N), nil, logits, ids, N, V)
}

// grow makes room for n slots, keeping the log-probs drawn so far.
func (h *hostDrawer) grow(n int) {
	n = max(n, 2*len(h.ids), 64)
	lp, lse := h.be.Alloc(kernels.F32, n), h.be.Alloc(kernels.F32, n)
	if old := len(h.ids); old > 0 {
		h.be.Copy(h.be.View(lp, 0, old), h.lp)
	}
	h.close()
	h.ids = append(h.ids, make([]int32, n-len(h.ids))...)
	h.lp, h.lse = lp, lse
}

func (h *hostDrawer) fetch(ids []int32, lp []float32) error {
	n := len(ids)
	if n > len(h.ids) || len(lp) != n {
		return fmt.Errorf("internal error: fetch of %d ids and %d log-probs from %d slots", n, len(lp), len(h.ids))
	}
	if n > 0 {
		copy(ids, h.ids[:n])
		h.be.CopyOut(lp, h.be.View(h.lp, 0, n))
	}
	return h.be.Sync()
}

func (h *hostDrawer) close() {
	for _, b := range []kernels.Buffer{h.lp, h.lse} {
		if b != nil {
			h.be.Free(b)
		}
	}
	h.lp, h.lse = nil, nil
}

// fork starts the G samples of a prompt whose prefill is done from their
// first tokens ids [G] and log-probs lp (drawn by step), shares its pages
// with the other G−1 cache sequences, and returns the samples that go on.
func (r *runState) fork(lead *seqState, ids []int32, lp []float32) ([]*seqState, error) {
	e, g := r.e, lead.g
	p := g.p
	G := len(g.Samples)
	if G > 1 {
		if err := e.cache.Fork(g.slots[0], g.slots[1:]); err != nil {
			return nil, err
		}
	}
	capN := min(p.MaxNewTokens, e.o.MaxLen-len(g.PromptIDs))
	var live []*seqState
	for s := range G {
		smp := &g.Samples[s]
		smp.IDs = append(make([]int32, 0, capN), ids[s])
		smp.LogProbs = append(make([]float32, 0, capN), lp[s])
		g.token(s, ids[s], lp[s])
		sq := &seqState{g: g, s: smp, slot: g.slots[s], ep: g.eps[s]}
		if f := r.ended(sq); f != "" {
			if sq.ep == nil {
				r.finish(sq, f)
				continue
			}
			r.pending = append(r.pending, turnEnd{sq, f}) // its turn ended, its episode goes on
			continue
		}
		live = append(live, sq)
	}
	e.stats.NewTokens += G
	return live, nil
}
