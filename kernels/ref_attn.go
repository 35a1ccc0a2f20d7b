package kernels

import "math"

// attnRow resolves the optional per-row inputs of AttnParams for batch row
// b: the cache slot (Slot[b], or b), the absolute position of query 0
// (QPos[b], or 0) and the number of valid keys (KLen[b], or QPos[b]+Tq,
// which is Tq when QPos is nil).
func attnRow(p AttnParams, b int) (slot, qpos, klen int) {
	slot = b
	if p.Slot != nil {
		slot = int(p.Slot[b])
	}
	if p.QPos != nil {
		qpos = int(p.QPos[b])
	}
	klen = qpos + p.Tq
	if p.KLen != nil {
		klen = int(p.KLen[b])
	}
	return
}

// attnKStart is the first key query i of batch row b may see: KStart[b*Tq+i],
// or 0 when KStart is nil.
func attnKStart(p AttnParams, b, i int) int {
	if p.KStart == nil {
		return 0
	}
	return int(p.KStart[b*p.Tq+i])
}

// attnKey is the cache row (of S·Tmax) that holds key j of batch row b,
// whose slot is s: row j of slot s, or with Pages row j%Tmax of page
// Pages[b*MaxPages+j/Tmax].
func attnKey(p AttnParams, s, b, j int) int {
	if p.Pages != nil {
		return int(p.Pages[b*p.MaxPages+j/p.Tmax])*p.Tmax + j%p.Tmax
	}
	return s*p.Tmax + j
}

// attnScale is p.Scale, or 1/sqrt(D) when it is 0.
func attnScale(p AttnParams) float64 {
	if p.Scale != 0 {
		return float64(p.Scale)
	}
	return 1 / math.Sqrt(float64(p.D))
}

// RefAttention is the reference for Backend.Attention. With (s, qp, kl) =
// (Slot[b] or b, QPos[b] or 0, KLen[b] or qp+Tq), ks = KStart[b*Tq+i] or 0,
// g = Hq/Hkv and r(j) = attnKey(p, s, b, j) (s*Tmax+j, or the row of key
// j's page):
//
//	for b, i, h := range B×Tq×Hq {
//		Q := q[((b*Tq+i)*Hq+h)*D:][:D];  O := out[((b*Tq+i)*Hq+h)*D:][:D]
//		K(j) := k[(r(j)*Hkv+h/g)*D:][:D];  V(j) likewise
//		L := min(qp+i+1, kl)              // keys ks <= j < L are visible
//		if L <= ks { O = 0; lse[(b*Tq+i)*Hq+h] = -Inf; continue }
//		sc(j) := scale * Σ_d Q[d]*K(j)[d]
//		m := max_{ks<=j<L} sc(j)
//		l := m + log(Σ_{ks<=j<L} exp(sc(j)-m)); lse[(b*Tq+i)*Hq+h] = l
//		O[d] = Σ_{ks<=j<L} exp(sc(j)-l) * V(j)[d]
//	}
func RefAttention(out, lse, q, k, v []float64, p AttnParams) {
	B, Tq, Hq, Hkv, D, Tmax := p.B, p.Tq, p.Hq, p.Hkv, p.D, p.Tmax
	g := Hq / Hkv
	scale := attnScale(p)
	sc := make([]float64, Tmax*max(1, p.MaxPages))
	for b := 0; b < B; b++ {
		s, qp, kl := attnRow(p, b)
		for i := 0; i < Tq; i++ {
			L, ks := min(qp+i+1, kl), attnKStart(p, b, i)
			for h := 0; h < Hq; h++ {
				Q := q[((b*Tq+i)*Hq+h)*D:][:D]
				O := out[((b*Tq+i)*Hq+h)*D:][:D]
				kvh := h / g
				if L <= ks {
					clear(O)
					lse[(b*Tq+i)*Hq+h] = math.Inf(-1)
					continue
				}
				m := math.Inf(-1)
				for j := ks; j < L; j++ {
					K := k[(attnKey(p, s, b, j)*Hkv+kvh)*D:][:D]
					dot := 0.0
					for d := 0; d < D; d++ {
						dot += Q[d] * K[d]
					}
					sc[j] = scale * dot
					m = math.Max(m, sc[j])
				}
				sum := 0.0
				for j := ks; j < L; j++ {
					sum += math.Exp(sc[j] - m)
				}
				l := m + math.Log(sum)
				lse[(b*Tq+i)*Hq+h] = l
				clear(O)
				for j := ks; j < L; j++ {
					pj := math.Exp(sc[j] - l)
					V := v[(attnKey(p, s, b, j)*Hkv+kvh)*D:][:D]
					for d := 0; d < D; d++ {
						O[d] += pj * V[d]
					}
				}
			}
		}
	}
}

// RefAttentionBackward is the reference for Backend.AttentionBackward, with
// the notation of RefAttention (dK(j), dV(j) index dk, dv like K(j), V(j)):
//
//	dq = 0; dk = 0; dv = 0
//	for b, i, h := range B×Tq×Hq {
//		if L <= ks { continue }
//		Dsum := Σ_d dO[d]*O[d]
//		for j := ks; j < L; j++ {
//			P := exp(scale*Σ_d Q[d]*K(j)[d] - lse[(b*Tq+i)*Hq+h])
//			dP := Σ_d dO[d]*V(j)[d]
//			dS := P * (dP - Dsum)
//			dQ[d] += scale*dS*K(j)[d];  dK(j)[d] += scale*dS*Q[d];  dV(j)[d] += P*dO[d]
//		}
//	}
//
// Rows of dk and dv that no query reads (other slots, padding) stay 0; two
// batch rows that share a slot accumulate into it.
func RefAttentionBackward(dq, dk, dv, dout, q, k, v, out, lse []float64, p AttnParams) {
	B, Tq, Hq, Hkv, D, Tmax := p.B, p.Tq, p.Hq, p.Hkv, p.D, p.Tmax
	g := Hq / Hkv
	scale := attnScale(p)
	clear(dq[:B*Tq*Hq*D])
	clear(dk[:p.S*Tmax*Hkv*D])
	clear(dv[:p.S*Tmax*Hkv*D])
	for b := 0; b < B; b++ {
		s, qp, kl := attnRow(p, b)
		for i := 0; i < Tq; i++ {
			L, ks := min(qp+i+1, kl), attnKStart(p, b, i)
			for h := 0; h < Hq; h++ {
				if L <= ks {
					continue
				}
				row := (b*Tq+i)*Hq + h
				Q, O, dO, dQ := q[row*D:][:D], out[row*D:][:D], dout[row*D:][:D], dq[row*D:][:D]
				kvh := h / g
				dsum := 0.0
				for d := 0; d < D; d++ {
					dsum += dO[d] * O[d]
				}
				for j := ks; j < L; j++ {
					off := (attnKey(p, s, b, j)*Hkv + kvh) * D
					K, V, dK, dV := k[off:][:D], v[off:][:D], dk[off:][:D], dv[off:][:D]
					dot, dp := 0.0, 0.0
					for d := 0; d < D; d++ {
						dot += Q[d] * K[d]
						dp += dO[d] * V[d]
					}
					P := math.Exp(scale*dot - lse[row])
					dS := P * (dp - dsum)
					for d := 0; d < D; d++ {
						dQ[d] += scale * dS * K[d]
						dK[d] += scale * dS * Q[d]
						dV[d] += P * dO[d]
					}
				}
			}
		}
	}
}

// RefKVWrite is the reference for Backend.KVWrite:
//
//	for b, t, h, d := range B×T×Hkv×D {
//		cache[((slot[b]*Tmax+pos[b]+t)*Hkv+h)*D+d] = x[((b*T+t)*Hkv+h)*D+d]
//	}
func RefKVWrite(cache, x []float64, slot, pos []int32, B, T, Hkv, D, Tmax int) {
	for b := 0; b < B; b++ {
		for t := 0; t < T; t++ {
			for h := 0; h < Hkv; h++ {
				for d := 0; d < D; d++ {
					cache[((int(slot[b])*Tmax+int(pos[b])+t)*Hkv+h)*D+d] = x[((b*T+t)*Hkv+h)*D+d]
				}
			}
		}
	}
}

// RefKVScatter is the reference for Backend.KVScatter:
//
//	for n, h, d := range N×Hkv×D {
//		cache[((page[n]*Tmax+off[n])*Hkv+h)*D+d] = x[(n*Hkv+h)*D+d]
//	}
func RefKVScatter(cache, x []float64, page, off []int32, N, Hkv, D, Tmax int) {
	for n := 0; n < N; n++ {
		for h := 0; h < Hkv; h++ {
			for d := 0; d < D; d++ {
				cache[((int(page[n])*Tmax+int(off[n]))*Hkv+h)*D+d] = x[(n*Hkv+h)*D+d]
			}
		}
	}
}
