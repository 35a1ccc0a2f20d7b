package kernels

import (
	"math"
	"sort"
)

// RefLogProbs is the reference for Backend.LogProbs (ent may be nil):
//
//	for n := 0; n < N; n++ {
//		row := logits[n*V:][:V]
//		m := max_v row[v]
//		lse[n] = m + log(Σ_v exp(row[v]-m))
//		lp[n] = 0; if targets[n] >= 0 { lp[n] = row[targets[n]] - lse[n] }
//		ent[n] = -Σ_{v: p>0} p*log(p),  p = exp(row[v]-lse[n])
//	}
func RefLogProbs(lp, lse, ent, logits []float64, targets []int32, N, V int) {
	for n := 0; n < N; n++ {
		row := logits[n*V:][:V]
		m := math.Inf(-1)
		for _, x := range row {
			m = math.Max(m, x)
		}
		sum := 0.0
		for _, x := range row {
			sum += math.Exp(x - m)
		}
		lse[n] = m + math.Log(sum)
		lp[n] = 0
		if targets[n] >= 0 {
			lp[n] = row[targets[n]] - lse[n]
		}
		if ent != nil {
			h := 0.0
			for _, x := range row {
				if p := math.Exp(x - lse[n]); p > 0 {
					h -= p * (x - lse[n])
				}
			}
			ent[n] = h
		}
	}
}

// RefLogProbsBackward is the reference for Backend.LogProbsBackward:
//
//	for n, v := range N×V {
//		dlogits[n*V+v] = 0
//		if targets[n] >= 0 {
//			dlogits[n*V+v] = -dlp[n] * exp(logits[n*V+v]-lse[n])
//			if v == targets[n] { dlogits[n*V+v] += dlp[n] }
//		}
//	}
func RefLogProbsBackward(dlogits, dlp, logits, lse []float64, targets []int32, N, V int) {
	for n := 0; n < N; n++ {
		for v := 0; v < V; v++ {
			i := n*V + v
			dlogits[i] = 0
			if targets[n] >= 0 {
				dlogits[i] = -dlp[n] * math.Exp(logits[i]-lse[n])
				if v == int(targets[n]) {
					dlogits[i] += dlp[n]
				}
			}
		}
	}
}

// RefSample is the reference for Backend.Sample. Ranking by probability is
// ranking by logit, so the reference sorts logits:
//
//	for n := 0; n < N; n++ {
//		row := logits[n*V:][:V]
//		if Temperature == 0 { ids[n] = argmax(row), lowest id on ties; continue }
//		rank := ids 0..V-1 sorted by row desc, id asc
//		p[v] := softmax(row/Temperature)[v]
//		K := V; if 0 < TopK < V { K = TopK }             // keep rank[:K]
//		if 0 < TopP < 1 {                                  // mass within the top-K set
//			W := Σ_{r<K} p[rank[r]]; c := 0.0
//			for r := 0; r < K; r++ { c += p[rank[r]]; if c >= TopP*W { K = r+1; break } }
//		}
//		tot := Σ_{r<K} p[rank[r]]; c := 0.0; ids[n] = rank[K-1]
//		for r := 0; r < K; r++ { c += p[rank[r]]; if c > u[n]*tot { ids[n] = rank[r]; break } }
//	}
//
// Applying TopP after TopK on the renormalized top-K mass is what Hugging
// Face's TopK then TopP logits warpers do.
func RefSample(ids []int32, logits []float64, u []float32, N, V int, p SampleParams) {
	rank := make([]int, V)
	prob := make([]float64, V)
	for n := 0; n < N; n++ {
		row := logits[n*V:][:V]
		if p.Temperature == 0 {
			best := 0
			for v := 1; v < V; v++ {
				if row[v] > row[best] {
					best = v
				}
			}
			ids[n] = int32(best)
			continue
		}
		for v := range rank {
			rank[v] = v
		}
		sort.SliceStable(rank, func(a, b int) bool { return row[rank[a]] > row[rank[b]] })
		m, sum := row[rank[0]], 0.0
		for v := range row {
			prob[v] = math.Exp((row[v] - m) / float64(p.Temperature))
			sum += prob[v]
		}
		for v := range prob {
			prob[v] /= sum
		}
		K := V
		if p.TopK > 0 && p.TopK < V {
			K = p.TopK
		}
		if p.TopP > 0 && p.TopP < 1 {
			W := 0.0
			for r := 0; r < K; r++ {
				W += prob[rank[r]]
			}
			c := 0.0
			for r := 0; r < K; r++ {
				c += prob[rank[r]]
				if c >= float64(p.TopP)*W {
					K = r + 1
					break
				}
			}
		}
		tot := 0.0
		for r := 0; r < K; r++ {
			tot += prob[rank[r]]
		}
		ids[n] = int32(rank[K-1])
		c := 0.0
		for r := 0; r < K; r++ {
			c += prob[rank[r]]
			if c > float64(u[n])*tot {
				ids[n] = int32(rank[r])
				break
			}
		}
	}
}
