package kernels

import (
	"cmp"
	"math"
	"slices"

	"github.com/argrl/argrl/kernels/internal/vec"
)

// Vocabulary-wide ops of the CPU backend, parallel over rows.
//
//	logits, dlogits [N, V]; lp, lse, ent, dlp [N]; targets, ids [N] (host)

// rowMax returns max(row), or -Inf for an empty row.
func rowMax(row []float32) float32 {
	m := float32(math.Inf(-1))
	for _, x := range row {
		if x > m {
			m = x
		}
	}
	return m
}

// LogProbs: two streaming passes per row (max, then Σexp and Σexp·x); no
// probability tensor is materialized. Entropy H = log s − Σ e·(x−m)/s with
// e = exp(x−m), s = Σ e.
func (c *cpuBackend) LogProbs(lp, lse, ent, logits Buffer, targets []int32, N, V int) {
	k := c.check("LogProbs")
	k.Vocab(N, V)
	k.Side("targets", len(targets), N)
	lps := k.f32("lp", lp, N)
	lses := k.f32("lse", lse, N)
	var ents []float32
	if ent != nil {
		ents = k.f32("ent", ent, N)
	}
	x := k.rows("logits", logits, N, V)
	if k.Skip(N) || !k.Targets(targets[:N], V) {
		return
	}
	c.parallelFor(N, max(1, (1<<14)/max(V, 1)), func(lo, hi int) {
		var tmp []float32
		for n := lo; n < hi; n++ {
			row := x.row(n, &tmp)
			m := rowMax(row)
			var s, t float64
			var buf [512]float32 // exp(row − m) by segments (vec.Exp)
			for j0 := 0; j0 < V; j0 += len(buf) {
				seg := row[j0:min(j0+len(buf), V)]
				e := buf[:len(seg)]
				vec.ExpShift(e, seg, m, 1)
				if ents == nil {
					for _, ev := range e {
						s += float64(ev)
					}
					continue
				}
				for j, ev := range e {
					s += float64(ev)
					if ev != 0 {
						t += float64(ev) * float64(seg[j]-m)
					}
				}
			}
			l := float64(m) + math.Log(s)
			lses[n] = float32(l)
			if tg := targets[n]; tg >= 0 {
				lps[n] = float32(float64(row[tg]) - l)
			} else {
				lps[n] = 0
			}
			if ents != nil {
				ents[n] = float32(math.Log(s) - t/s)
			}
		}
	})
}

// LogProbsBackward: dlogits = dlp·(onehot(target) − exp(logits − lse)),
// 0 on rows whose target is negative.
func (c *cpuBackend) LogProbsBackward(dlogits, dlp, logits, lse Buffer, targets []int32, N, V int) {
	k := c.check("LogProbsBackward")
	k.Vocab(N, V)
	k.Side("targets", len(targets), N)
	dx := k.f32("dlogits", dlogits, N*V)
	d := k.in("dlp", dlp, N)
	x := k.rows("logits", logits, N, V)
	l := k.in("lse", lse, N)
	if k.Skip(N) || !k.Targets(targets[:N], V) {
		return
	}
	c.parallelFor(N, max(1, (1<<14)/max(V, 1)), func(lo, hi int) {
		var tmp []float32
		for n := lo; n < hi; n++ {
			out := dx[n*V : n*V+V]
			tg := targets[n]
			if tg < 0 {
				clear(out)
				continue
			}
			vec.ExpShift(out, x.row(n, &tmp), l[n], -d[n])
			out[tg] += d[n]
		}
	})
}

// Sample implements SampleParams without sorting the vocabulary. Tokens
// are ranked by logit (the same order as by probability). A row is bucketed
// by logit into sampleBuckets equal-width bins (bin order is rank order),
// with each bin's count and probability mass; the top-k cut, the top-p cut
// and the draw each walk the bins, skip every bin that cannot contain their
// answer, and sort only the one bin that does. Cost: a few passes over V.
func (c *cpuBackend) Sample(ids []int32, logits Buffer, u []float32, N, V int, p SampleParams) {
	k := c.check("Sample")
	k.Sample(len(ids), u, N, V, p)
	x := k.rows("logits", logits, N, V)
	if k.Skip(N) {
		return
	}
	c.parallelFor(N, 1, func(lo, hi int) {
		var s sampler
		var tmp []float32
		for n := lo; n < hi; n++ {
			row := x.row(n, &tmp)
			if p.Temperature == 0 {
				best := 0
				for v, xv := range row {
					if xv > row[best] {
						best = v
					}
				}
				ids[n] = int32(best)
				continue
			}
			ids[n] = s.draw(row, u[n], p)
		}
	})
}

const sampleBuckets = 2048

// sampler holds one goroutine's scratch for Sample.
type sampler struct {
	row  []float32
	e    []float32 // exp((x−max)/T)
	bk   []uint16  // bin of each token
	cnt  [sampleBuckets]int
	mass [sampleBuckets]float64
	memb []int32 // sorted members of bin memBin
	mBin int
}

// draw samples one token of row for uniform u.
func (s *sampler) draw(row []float32, u float32, p SampleParams) int32 {
	V := len(row)
	s.row = row
	s.e = slices.Grow(s.e[:0], V)[:V]
	s.bk = slices.Grow(s.bk[:0], V)[:V]
	s.mBin = -1
	m := rowMax(row)
	if math.IsInf(float64(m), 0) || m != m {
		return int32(max(0, slices.Index(row, m))) // +Inf wins; all −Inf/NaN: token 0
	}
	it := 1 / p.Temperature
	lo := m
	var Z float64
	for v, x := range row {
		s.e[v] = (x - m) * it
	}
	vec.Exp(s.e)
	for v, x := range row {
		Z += float64(s.e[v])
		if x < lo && !math.IsInf(float64(x), -1) {
			lo = x
		}
	}
	var scale float32
	if m > lo {
		scale = (sampleBuckets - 1) / (m - lo)
	}
	s.cnt = [sampleBuckets]int{}
	s.mass = [sampleBuckets]float64{}
	for v, x := range row {
		b := sampleBuckets - 1
		if f := (m - x) * scale; f < sampleBuckets-1 {
			b = max(0, int(f))
		}
		s.bk[v] = uint16(b)
		s.cnt[b]++
		s.mass[b] += float64(s.e[v])
	}
	never := func(float64) bool { return false }
	K, W := V, Z
	if p.TopK > 0 && p.TopK < V {
		K = p.TopK
		_, _, W = s.walk(K, never)
	}
	tot := W
	if p.TopP > 0 && p.TopP < 1 {
		target := float64(p.TopP) * W
		var r int
		r, _, tot = s.walk(K, func(c float64) bool { return c >= target })
		K = r + 1
	}
	target := float64(u) * tot
	_, id, _ := s.walk(K, func(c float64) bool { return c > target })
	return id
}

// walk visits ranks 0..limit−1 in order, accumulating probability mass,
// and returns the first rank r whose cumulative mass (through r) satisfies
// stop, or limit−1 if none does, with its token and cumulative mass. stop
// must be monotone in the mass, so a bin whose total does not trigger it is
// skipped whole.
func (s *sampler) walk(limit int, stop func(float64) bool) (int, int32, float64) {
	r, cum := 0, 0.0
	for b := 0; b < sampleBuckets; b++ {
		n := s.cnt[b]
		if n == 0 {
			continue
		}
		if r+n < limit && !stop(cum+s.mass[b]) {
			r, cum = r+n, cum+s.mass[b]
			continue
		}
		for _, v := range s.members(b) {
			cum += float64(s.e[v])
			if stop(cum) || r == limit-1 {
				return r, v, cum
			}
			r++
		}
	}
	return r - 1, -1, cum // unreachable: limit ≤ V ends the last bin
}

// members returns the tokens of bin b sorted by logit descending, id
// ascending (the rank order inside the bin).
func (s *sampler) members(b int) []int32 {
	if s.mBin == b {
		return s.memb
	}
	s.memb = s.memb[:0]
	for v, bv := range s.bk {
		if int(bv) == b {
			s.memb = append(s.memb, int32(v))
		}
	}
	row := s.row
	slices.SortStableFunc(s.memb, func(a, b int32) int { return cmp.Compare(row[b], row[a]) })
	s.mBin = b
	return s.memb
}

// rows is a read-only [N, V] input read one row at a time: rows of an F32
// buffer are slices of it, rows of a BF16 buffer are widened into the
// caller's row buffer (so no N×V temporary exists).
type rows struct {
	f []float32
	h []uint16
	V int
}

// rows checks an [N, V] read-only input.
func (k *chk) rows(name string, b Buffer, N, V int) rows {
	cb := k.buf(name, b, N*V, Read)
	if cb == nil {
		return rows{}
	}
	if cb.dt == F32 {
		return rows{f: cb.st.f[cb.off : cb.off+N*V], V: V}
	}
	return rows{h: cb.st.h[cb.off : cb.off+N*V], V: V}
}

// row returns row n as float32, widening into *tmp for BF16 (the slice is
// valid until the next call with the same tmp).
func (r rows) row(n int, tmp *[]float32) []float32 {
	if r.h == nil {
		return r.f[n*r.V : n*r.V+r.V]
	}
	if cap(*tmp) < r.V {
		*tmp = make([]float32, r.V)
	}
	out := (*tmp)[:r.V]
	for i, h := range r.h[n*r.V : n*r.V+r.V] {
		out[i] = Float32FromBF16(h)
	}
	return out
}
