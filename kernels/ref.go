package kernels

import "math"

// Naive float64 references for every Backend op (llm.c style): each doc
// comment is the loop, and the body is that loop. They are the oracle of
// kerneltest.RunAll (backends are compared with them at float32 tolerance,
// and their backward passes are checked against central finite differences
// in float64) and the specification the CUDA kernels are ported from.
// Shapes follow the legend in backend.go; slices must be long enough.

// RefMatMul is the reference for Backend.MatMul:
//
//	for bt := 0; bt < p.Batch; bt++ {
//		A, B, C := a[bt*p.StrideA:], b[bt*p.StrideB:], c[bt*p.StrideC:]
//		for i := 0; i < p.M; i++ {
//			for j := 0; j < p.N; j++ {
//				s := 0.0
//				for l := 0; l < p.K; l++ {
//					s += opA(i, l) * opB(l, j) // A[i*K+l] or A[l*M+i]; B[l*N+j] or B[j*K+l]
//				}
//				C[i*ldc+j] = Alpha*s + Beta*C[i*ldc+j] // Beta == 0 ignores C (NaN-safe); ldc = p.Ldc()
//			}
//		}
//	}
//
// With p.BF16, opA and opB are rounded to bfloat16 first (bf16r). p.Bias
// is ignored here: RefMatMulBias adds it. The storage types of A and C are
// the caller's: a BF16 A is passed as its values, and a BF16 C is the
// result rounded (bf16r) after the bias.
func RefMatMul(c, a, b []float64, p MatMulParams) {
	M, N, K, ldc := p.M, p.N, p.K, p.Ldc()
	for bt := 0; bt < p.Batch; bt++ {
		A, B, C := a[bt*p.StrideA:], b[bt*p.StrideB:], c[bt*p.StrideC:]
		for i := 0; i < M; i++ {
			for j := 0; j < N; j++ {
				s := 0.0
				for l := 0; l < K; l++ {
					var x, y float64
					if p.TransA {
						x = A[l*M+i]
					} else {
						x = A[i*K+l]
					}
					if p.TransB {
						y = B[j*K+l]
					} else {
						y = B[l*N+j]
					}
					if p.BF16 {
						x, y = bf16r(x), bf16r(y)
					}
					s += x * y
				}
				v := float64(p.Alpha) * s
				if p.Beta != 0 {
					v += float64(p.Beta) * C[i*ldc+j]
				}
				C[i*ldc+j] = v
			}
		}
	}
}

// bf16r rounds x to float32, then to bfloat16 (BF16FromFloat32).
func bf16r(x float64) float64 { return float64(Float32FromBF16(BF16FromFloat32(float32(x)))) }

// RefEmbedding is the reference for Backend.Embedding:
//
//	for n := range ids {
//		for c := 0; c < C; c++ { out[n*C+c] = table[ids[n]*C+c] }
//	}
func RefEmbedding(out, table []float64, ids []int32, C int) {
	for n, id := range ids {
		for c := 0; c < C; c++ {
			out[n*C+c] = table[int(id)*C+c]
		}
	}
}

// RefEmbeddingBackward is the reference for Backend.EmbeddingBackward:
//
//	dtable[:] = 0
//	for n := range ids {
//		for c := 0; c < C; c++ { dtable[ids[n]*C+c] += dout[n*C+c] }
//	}
func RefEmbeddingBackward(dtable, dout []float64, ids []int32, C int) {
	clear(dtable)
	for n, id := range ids {
		for c := 0; c < C; c++ {
			dtable[int(id)*C+c] += dout[n*C+c]
		}
	}
}

// RefRMSNorm is the reference for Backend.RMSNorm:
//
//	for n := 0; n < N; n++ {
//		ss := 0.0
//		for c := 0; c < C; c++ { ss += x[n*C+c] * x[n*C+c] }
//		rstd[n] = 1 / math.Sqrt(ss/C + eps)
//		for c := 0; c < C; c++ { out[n*C+c] = x[n*C+c] * rstd[n] * w[c] }
//	}
func RefRMSNorm(out, rstd, x, w []float64, N, C int, eps float64) {
	for n := 0; n < N; n++ {
		ss := 0.0
		for c := 0; c < C; c++ {
			ss += x[n*C+c] * x[n*C+c]
		}
		rstd[n] = 1 / math.Sqrt(ss/float64(C)+eps)
		for c := 0; c < C; c++ {
			out[n*C+c] = x[n*C+c] * rstd[n] * w[c]
		}
	}
}

// RefRMSNormBackward is the reference for Backend.RMSNormBackward:
//
//	dw[:] = 0
//	for n := 0; n < N; n++ {
//		r, dot := rstd[n], 0.0
//		for c := 0; c < C; c++ { dot += dout[n*C+c] * w[c] * x[n*C+c] }
//		for c := 0; c < C; c++ {
//			dx[n*C+c] = r*w[c]*dout[n*C+c] - x[n*C+c]*r*r*r*dot/C
//			dw[c] += dout[n*C+c] * x[n*C+c] * r
//		}
//	}
func RefRMSNormBackward(dx, dw, dout, x, w, rstd []float64, N, C int) {
	clear(dw[:C])
	for n := 0; n < N; n++ {
		r, dot := rstd[n], 0.0
		for c := 0; c < C; c++ {
			dot += dout[n*C+c] * w[c] * x[n*C+c]
		}
		for c := 0; c < C; c++ {
			dx[n*C+c] = r*w[c]*dout[n*C+c] - x[n*C+c]*r*r*r*dot/float64(C)
			dw[c] += dout[n*C+c] * x[n*C+c] * r
		}
	}
}

// RefRoPE is the reference for Backend.RoPE (rotate-half layout, tables
// [P, D/2] from RopeTables; inverse negates sin):
//
//	for n := 0; n < N; n++ {
//		for h := 0; h < H; h++ {
//			for i := 0; i < D/2; i++ {
//				co, si := cos[pos[n]*D/2+i], sin[pos[n]*D/2+i] // si = -si if inverse
//				x0, x1 := x[(n*H+h)*D+i], x[(n*H+h)*D+i+D/2]
//				out[(n*H+h)*D+i] = x0*co - x1*si
//				out[(n*H+h)*D+i+D/2] = x1*co + x0*si
//			}
//		}
//	}
func RefRoPE(out, x, cos, sin []float64, pos []int32, N, H, D int, inverse bool) {
	h2 := D / 2
	for n := 0; n < N; n++ {
		for h := 0; h < H; h++ {
			for i := 0; i < h2; i++ {
				co, si := cos[int(pos[n])*h2+i], sin[int(pos[n])*h2+i]
				if inverse {
					si = -si
				}
				x0, x1 := x[(n*H+h)*D+i], x[(n*H+h)*D+i+h2]
				out[(n*H+h)*D+i] = x0*co - x1*si
				out[(n*H+h)*D+i+h2] = x1*co + x0*si
			}
		}
	}
}

// RefSwiGLU is the reference for Backend.SwiGLU:
//
//	for r := 0; r < N; r++ {
//		for f := 0; f < F; f++ {
//			g := gate[r*ld+f]
//			out[r*F+f] = g / (1 + math.Exp(-g)) * up[r*ld+f]
//		}
//	}
func RefSwiGLU(out, gate, up []float64, N, F, ld int) {
	for r := 0; r < N; r++ {
		for f := 0; f < F; f++ {
			g := gate[r*ld+f]
			out[r*F+f] = g / (1 + math.Exp(-g)) * up[r*ld+f]
		}
	}
}

// RefSwiGLUBackward is the reference for Backend.SwiGLUBackward:
//
//	for r := 0; r < N; r++ {
//		for f := 0; f < F; f++ {
//			i, d := r*ld+f, dout[r*F+f]
//			s := 1 / (1 + math.Exp(-gate[i]))             // sigmoid
//			dgate[i] = d * up[i] * s * (1 + gate[i]*(1-s)) // silu'(g) = s(1+g(1-s))
//			dup[i] = d * gate[i] * s
//		}
//	}
func RefSwiGLUBackward(dgate, dup, dout, gate, up []float64, N, F, ld int) {
	for r := 0; r < N; r++ {
		for f := 0; f < F; f++ {
			i, d := r*ld+f, dout[r*F+f]
			s := 1 / (1 + math.Exp(-gate[i]))
			dgate[i] = d * up[i] * s * (1 + gate[i]*(1-s))
			dup[i] = d * gate[i] * s
		}
	}
}

// StridedLen is the elements a [N,F] operand read at row stride ld spans:
// (N−1)·ld + F, or 0 when N or F is 0.
func StridedLen(N, F, ld int) int {
	if N <= 0 || F <= 0 {
		return 0
	}
	return (N-1)*ld + F
}

// RefAXPBY is the reference for Backend.AXPBY (b is ignored when beta == 0):
//
//	for i := 0; i < n; i++ { out[i] = alpha*a[i] + beta*b[i] }
func RefAXPBY(out, a, b []float64, alpha, beta float64, n int) {
	for i := 0; i < n; i++ {
		v := alpha * a[i]
		if beta != 0 {
			v += beta * b[i]
		}
		out[i] = v
	}
}

// RefMul is the reference for Backend.Mul:
//
//	for i := 0; i < n; i++ { out[i] = a[i] * b[i] }
func RefMul(out, a, b []float64, n int) {
	for i := 0; i < n; i++ {
		out[i] = a[i] * b[i]
	}
}

// RefAddBias is the reference for Backend.AddBias:
//
//	for n := 0; n < N; n++ { for c := 0; c < C; c++ { out[n*C+c] = x[n*C+c] + bias[c] } }
func RefAddBias(out, x, bias []float64, N, C int) {
	for n := 0; n < N; n++ {
		for c := 0; c < C; c++ {
			out[n*C+c] = x[n*C+c] + bias[c]
		}
	}
}

// RefSumRows is the reference for Backend.SumRows:
//
//	out[:C] = 0
//	for n := 0; n < N; n++ { for c := 0; c < C; c++ { out[c] += x[n*C+c] } }
func RefSumRows(out, x []float64, N, C int) {
	clear(out[:C])
	for n := 0; n < N; n++ {
		for c := 0; c < C; c++ {
			out[c] += x[n*C+c]
		}
	}
}

// RefDot is the reference for Backend.Dot:
//
//	out[0] = 0
//	for i := 0; i < n; i++ { out[0] += a[i] * b[i] }
func RefDot(out, a, b []float64, n int) {
	out[0] = 0
	for i := 0; i < n; i++ {
		out[0] += a[i] * b[i]
	}
}

// RefDropout is the reference for Backend.Dropout (p ≥ 1 drops everything):
//
//	for i := 0; i < n; i++ {
//		if p < 1 && DropoutUniform(seed, i) >= p { out[i] = x[i] / (1 - p) } else { out[i] = 0 }
//	}
//
// The backward is the same call on dout with the same seed.
func RefDropout(out, x []float64, n int, p float32, seed uint64) {
	for i := 0; i < n; i++ {
		if p < 1 && DropoutUniform(seed, i) >= p {
			out[i] = x[i] / (1 - float64(p))
		} else {
			out[i] = 0
		}
	}
}

// RefAdamW is the reference for Backend.AdamW (t = p.Step):
//
//	for i := 0; i < n; i++ {
//		m[i] = β1*m[i] + (1-β1)*g[i]
//		v[i] = β2*v[i] + (1-β2)*g[i]*g[i]
//		mhat, vhat := m[i]/(1-β1^t), v[i]/(1-β2^t)
//		param[i] -= LR * (mhat/(math.Sqrt(vhat)+Eps) + WeightDecay*param[i])
//	}
func RefAdamW(param, grad, m, v []float64, n int, p AdamWParams) {
	b1, b2 := float64(p.Beta1), float64(p.Beta2)
	bc1 := 1 - math.Pow(b1, float64(p.Step))
	bc2 := 1 - math.Pow(b2, float64(p.Step))
	for i := 0; i < n; i++ {
		g := grad[i]
		m[i] = b1*m[i] + (1-b1)*g
		v[i] = b2*v[i] + (1-b2)*g*g
		mhat, vhat := m[i]/bc1, v[i]/bc2
		param[i] -= float64(p.LR) * (mhat/(math.Sqrt(vhat)+float64(p.Eps)) + float64(p.WeightDecay)*param[i])
	}
}

// RefMatMulBias is RefMatMul followed by C[b][i*N+j] += bias[j] for every
// batch item b and row i (MatMulParams.Bias).
func RefMatMulBias(c, a, b, bias []float64, p MatMulParams) {
	RefMatMul(c, a, b, p)
	for bt := 0; bt < p.Batch; bt++ {
		C := c[bt*p.StrideC:]
		for i := 0; i < p.M; i++ {
			for j := 0; j < p.N; j++ {
				C[i*p.Ldc()+j] += bias[j]
			}
		}
	}
}
