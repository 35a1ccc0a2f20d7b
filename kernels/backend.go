// Package kernels defines the compute backend every argrl model runs on: one
// interface over device buffers, a pure-Go CPU implementation that is always
// built, and a CUDA implementation in kernels/cuda (the GPU device behind
// //go:build argrl_cuda; its emulator in every build).
//
// Shape legend, used in every file of this package:
//
//	B  batch (sequences)            T   time (tokens per sequence)
//	N  rows = B*T (flattened)       C   channels (hidden size)
//	H  heads; Hq query heads, Hkv key/value heads (GQA: Hq % Hkv == 0)
//	D  head dim                     F   MLP intermediate size
//	V  vocabulary size              S   KV-cache slots, Tmax slot length
//
// All tensors are dense row-major. Compute is float32. A Buffer may store
// bf16 (weights on device); see DType.
//
// Conventions shared by every op (the argument checks are one contract,
// ArgCheck in check.go, that every backend applies):
//   - Outputs are overwritten, never accumulated, unless the doc says so
//     (MatMul with Beta != 0 is the one accumulating op).
//   - Read-only inputs are never written. Elementwise ops (AXPBY, Mul,
//     AddBias, SwiGLU, Dropout, RoPE, RMSNorm's out) may be given an output
//     that aliases an input; MatMul, Attention and the backward ops must not
//     alias. kerneltest checks that every op leaves its inputs unchanged.
//   - Ops use the first n elements of their buffers: a buffer longer than an
//     op needs is fine, a shorter one is an error. CopyIn, CopyOut and Upload
//     move whole buffers (use View for part of one). Outputs and in-place
//     state must be F32 and writable (not a read-only buffer from Mapper),
//     except MatMul's C and RMSNorm's out, which may be BF16; read-only
//     inputs may be BF16.
//   - Sizes: dimensions must be ≥ 0 and host side inputs at least as long as
//     the op reads. Every buffer argument is checked even when a size is 0.
//     A call with a zero size then writes nothing, except where its result
//     is defined on empty input: Dot and SumRows with no terms write 0,
//     RMSNormBackward writes dw = 0 when N = 0, EmbeddingBackward zeroes
//     dtable, AttentionBackward zeroes dq, dk and dv, and MatMul with K = 0
//     writes C = Beta·C. Index side inputs (ids, targets, positions, slots)
//     are range-checked only when the op has work; a vocabulary op with rows
//     but V = 0 is an error.
//   - Integer side inputs (token ids, positions, slots) are host slices; a
//     device backend uploads them.
//   - Ops do not return errors. A backend records the first failure (a
//     length mismatch, an out-of-range id, a device fault) and reports it
//     from Sync, which also clears it. Callers Sync at step boundaries.
//   - Each op has a naive reference in ref.go whose doc comment is the loop;
//     kerneltest.RunAll checks a backend against those references and against
//     finite differences.
package kernels

// DType is the storage type of a Buffer. Arithmetic is always float32.
type DType uint8

const (
	F32  DType = iota // 4-byte IEEE float
	BF16              // 2-byte bfloat16, storage only (weights); converted to f32 on load
)

// Size is the bytes per element (0 for an unknown DType).
func (d DType) Size() int {
	switch d {
	case F32:
		return 4
	case BF16:
		return 2
	}
	return 0
}

func (d DType) String() string {
	switch d {
	case F32:
		return "f32"
	case BF16:
		return "bf16"
	}
	return "dtype?"
}

// Buffer is an opaque handle to backend memory: Len elements of DType.
// Views made by Backend.View share storage with their parent.
type Buffer interface {
	Len() int
	DType() DType
}

// MatMulParams describes C[b] = Alpha·op(A[b])·op(B[b]) + Beta·C[b] for
// b < Batch, where op(A) is M×K and op(B) is K×N (row-major). With TransA, A
// is stored K×M; with TransB, B is stored N×K (the Hugging Face Linear layout
// W[out,in], so y = x·Wᵀ is TransB). Stride* are element offsets between
// consecutive batch items; a zero stride broadcasts that operand (for Batch
// > 1 a zero StrideC is invalid). B may be BF16, and so may A and C
// (bf16 activations between ops in the bf16 modes): a BF16 A is read as its
// values (exact), a BF16 C gets each F32 result (bias included) rounded to
// nearest even and, with Beta != 0, is read as its values. LdC, if not 0,
// is C's row stride (≥ N): row i of item b is C[b·StrideC+i·LdC:][:N], and
// the elements between rows are left as they are (a column block of a wider
// matrix: the fused projections' LoRA branches accumulate into their own
// columns of the fused output). 0 means N.
//
// BF16 asks for bf16 products (PyTorch autocast's matmul): every element
// of op(A) and op(B) rounded to bfloat16 (to nearest even; a bf16 B as it
// is; subnormals may flush to zero), products exact, sums in float32 in a
// backend-defined order. A backend without bf16 arithmetic (see
// BF16Products) ignores it and computes the float32 product, so results
// are then those of BF16 = false, bit for bit.
//
// Bias, if non-nil, is a read-only [N] (F32 or BF16) added to every row of
// every batch item after the product: C = Alpha·op(A)·op(B) + Beta·C +
// bias, the bias added in float32 to the rounded product, so the result is
// that of MatMul followed by AddBias bit for bit (a GEMM epilogue on the
// CUDA backend: cuBLASLt's CUBLASLT_EPILOGUE_BIAS).
type MatMulParams struct {
	Batch, M, N, K            int
	TransA, TransB            bool
	Alpha, Beta               float32
	StrideA, StrideB, StrideC int
	BF16                      bool
	Bias                      Buffer
	LdC                       int
}

// Ldc is C's row stride: LdC, or N when LdC is 0.
func (p MatMulParams) Ldc() int {
	if p.LdC != 0 {
		return p.LdC
	}
	return p.N
}

// BF16Products reports whether be computes MatMuls with BF16 set in bf16
// arithmetic (an optional method, BF16Products() bool, of the backend);
// otherwise they are float32 products.
func BF16Products(be Backend) bool {
	x, ok := be.(interface{ BF16Products() bool })
	return ok && x.BF16Products()
}

// AttnParams describes causal grouped-query attention.
//
//	q, out  [B, Tq, Hq, D]
//	k, v    [S, Tmax, Hkv, D]   row b of the batch reads slot Slot[b]
//	lse     [B, Tq, Hq]         log-sum-exp of the scaled scores, kept for backward
//
// Query i of batch row b sits at absolute position QPos[b]+i and attends to
// key j iff j <= QPos[b]+i and j < KLen[b]. Query head h reads key/value head
// h/(Hq/Hkv). Scores are Scale·q·k (Scale 0 means 1/sqrt(D)). A query row that
// sees no key gets out = 0 and lse = -Inf, and receives no gradient.
//
// With Pages set (a paged cache, decoding) "key j" is row j%Tmax of page
// Pages[b*MaxPages+j/Tmax] instead of row j of slot Slot[b], and KLen may
// reach MaxPages·Tmax. AttentionBackward refuses Pages (training attends
// over contiguous keys).
//
// Training uses S = B, Tmax = Tq, Slot = nil (identity), QPos = nil (all 0),
// KLen = per-sequence valid lengths (nil means Tq: no padding; sequences
// are right-padded), or, for packed rows, KStart (and QPos = nil, KLen
// = the row's used length). Decoding uses the cache: Tq = 1, QPos[b] = tokens already
// cached, KLen[b] = QPos[b]+1.
type AttnParams struct {
	B, Tq, Hq, Hkv, D int
	S, Tmax           int
	Slot              []int32 // [B] or nil
	QPos              []int32 // [B] or nil
	KLen              []int32 // [B] or nil
	Scale             float32
	// KStart, if non-nil, is [B*Tq]: query i of batch row b sees key j only
	// if also j >= KStart[b*Tq+i]. Packed rows (several sequences laid end to
	// end in one row) set it to the start of the query's own sequence, so
	// attention never crosses a boundary. nil means 0 for every query.
	KStart []int32
	// Pages, if non-nil, is [B*MaxPages]: the KV cache is paged. k and v are
	// then [S, Tmax, Hkv, D] with S pages of Tmax tokens each; key j of batch
	// row b is row j%Tmax of page Pages[b*MaxPages+j/Tmax]. Slot must be nil,
	// and so must KStart.
	Pages    []int32
	MaxPages int
}

// AdamWParams are the hyper-parameters of one decoupled-weight-decay Adam
// step (Loshchilov & Hutter): with t = Step (1-based),
//
//	m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²
//	p -= LR·( (m/(1−β1ᵗ)) / (sqrt(v/(1−β2ᵗ)) + Eps) + WeightDecay·p )
type AdamWParams struct {
	LR, Beta1, Beta2, Eps, WeightDecay float32
	Step                               int
}

// SampleParams select tokens from logits. Temperature 0 is greedy (argmax,
// lowest id on ties). Otherwise probs = softmax(logits/Temperature); tokens
// are ranked by prob descending (lower id first on ties); TopK > 0 keeps the
// first TopK; TopP in (0,1) keeps the shortest ranked prefix whose mass is
// ≥ TopP (at least one token); the kept probs are renormalized and the token
// chosen is the first in rank order whose cumulative kept mass exceeds
// u·total, for the row's uniform u ∈ [0,1).
type SampleParams struct {
	Temperature, TopP float32
	TopK              int
}

// Backend is the set of device operations argrl's models need, forward and
// backward. Every backend passes kerneltest.RunAll.
type Backend interface {
	Name() string

	// Memory.
	Alloc(dt DType, n int) Buffer      // zero-filled
	Free(b Buffer)                     // views are not freed separately
	View(b Buffer, off, n int) Buffer  // elements [off, off+n) of b
	CopyIn(dst Buffer, src []float32)  // host → device (converts to bf16 if dst is BF16)
	CopyOut(dst []float32, src Buffer) // device → host (converts from bf16)
	Copy(dst, src Buffer)              // device → device, equal lengths and dtypes
	// Convert copies src into dst, equal lengths, converting the storage
	// type: F32 → BF16 rounds to nearest even (BF16FromFloat32), BF16 →
	// F32 is exact, equal dtypes copy.
	Convert(dst, src Buffer)
	Fill(dst Buffer, v float32) // every element = v
	Sync() error                // waits for queued work; returns and clears the first recorded error
	// Close releases what the backend holds (device memory, a GPU context,
	// an emulator process); its buffers become invalid and it must not be
	// used again. Whoever opened a backend closes it, after the models on
	// it. The CPU backend's Close does nothing.
	Close() error
	// Upload copies raw bytes, dst.Len() little-endian elements of
	// dst.DType() (4 bytes each for F32, 2 for BF16), into dst as they are:
	// no conversion (a checkpoint tensor goes straight to the device).
	Upload(dst Buffer, raw []byte)

	// MatMul: see MatMulParams.
	MatMul(c, a, b Buffer, p MatMulParams)

	// Embedding: out[n,c] = table[ids[n],c]; table [V,C] (may be BF16), out [N,C].
	Embedding(out, table Buffer, ids []int32, C int)
	// EmbeddingBackward: dtable = 0; dtable[ids[n],c] += dout[n,c].
	EmbeddingBackward(dtable, dout Buffer, ids []int32, C int)

	// RMSNorm over the last axis: rstd[n] = 1/sqrt(mean_c x[n,c]² + eps);
	// out[n,c] = x[n,c]·rstd[n]·w[c]. x, out [N,C]; w [C]; rstd [N]. out
	// may be BF16 (the one op whose output may): each element is the F32
	// result rounded to nearest even, the input a bf16 GEMM wants, written
	// without an F32 copy and a Convert.
	RMSNorm(out, rstd, x, w Buffer, N, C int, eps float32)
	// RMSNormBackward writes dx [N,C] and dw [C] (summed over rows).
	RMSNormBackward(dx, dw, dout, x, w, rstd Buffer, N, C int)

	// RoPE rotates x [N,H,D] in the rotate-half layout (pairs i and i+D/2) by
	// angle(pos[n], i): out[i] = x[i]·cos − x[i+D/2]·sin, out[i+D/2] =
	// x[i+D/2]·cos + x[i]·sin, with cos/sin read from tables [P, D/2] at row
	// pos[n] (see RopeTables). inverse rotates by −angle, which is the backward.
	RoPE(out, x, cos, sin Buffer, pos []int32, N, H, D int, inverse bool)

	// Attention: see AttnParams. Writes out and lse.
	Attention(out, lse, q, k, v Buffer, p AttnParams)
	// AttentionBackward writes dq [B,Tq,Hq,D], dk and dv [S,Tmax,Hkv,D],
	// recomputing probabilities from q, k and lse (no stored T×T matrix).
	AttentionBackward(dq, dk, dv, dout, q, k, v, out, lse Buffer, p AttnParams)
	// KVWrite copies x [B,T,Hkv,D] into cache [S,Tmax,Hkv,D] at slot Slot[b],
	// positions pos[b]..pos[b]+T-1.
	KVWrite(cache, x Buffer, slot, pos []int32, B, T, Hkv, D, Tmax int)
	// KVScatter copies row n of x [N,Hkv,D] into the paged cache
	// [S,Tmax,Hkv,D] at page page[n], row off[n] (S = cache length /
	// (Tmax·Hkv·D)): the write of a paged decode step, each new token to
	// its sequence's page.
	KVScatter(cache, x Buffer, page, off []int32, N, Hkv, D, Tmax int)

	// SwiGLU: out[r,f] = silu(gate[r·ld+f])·up[r·ld+f] for r < N, f < F,
	// silu(x) = x/(1+e^−x); out is [N,F] dense, gate and up are read at row
	// stride ld ≥ F (ld = F: separate [N,F] buffers; ld = 2F with up a view
	// of gate F elements on: the fused gate/up GEMM's [N,2F] output).
	SwiGLU(out, gate, up Buffer, N, F, ld int)
	// SwiGLUBackward writes dgate and dup at row stride ld (the F columns of
	// each row; the rest is left as it is), from dout [N,F] dense.
	SwiGLUBackward(dgate, dup, dout, gate, up Buffer, N, F, ld int)

	// LogProbs is the fused log-softmax + gather over logits [N,V]:
	// lse[n] = log Σ_v exp(logits[n,v]); lp[n] = logits[n,targets[n]] − lse[n]
	// (0 where targets[n] < 0); ent, if non-nil, gets the entropy
	// −Σ_v p·log p. Cross-entropy is −lp.
	LogProbs(lp, lse, ent, logits Buffer, targets []int32, N, V int)
	// LogProbsBackward: dlogits[n,v] = dlp[n]·(1[v=targets[n]] − exp(logits[n,v]−lse[n])),
	// and 0 for rows with targets[n] < 0.
	LogProbsBackward(dlogits, dlp, logits, lse Buffer, targets []int32, N, V int)

	// Elementwise over n elements: out = alpha·a + beta·b (b may be nil when beta = 0).
	AXPBY(out, a, b Buffer, alpha, beta float32, n int)
	// Mul: out = a·b elementwise.
	Mul(out, a, b Buffer, n int)
	// AddBias: out[n,c] = x[n,c] + bias[c].
	AddBias(out, x, bias Buffer, N, C int)
	// SumRows: out[c] = Σ_n x[n,c] (the bias gradient).
	SumRows(out, x Buffer, N, C int)
	// Dot: out[0] = Σ_i a[i]·b[i] (out has one element).
	Dot(out, a, b Buffer, n int)
	// Dropout: out[i] = x[i]·keep(i)/(1−p) with keep(i) = DropoutUniform(seed,i) ≥ p.
	// Applying it to dout with the same seed is the backward.
	Dropout(out, x Buffer, n int, p float32, seed uint64)

	// AdamW updates param, m and v in place from grad (all [n]).
	AdamW(param, grad, m, v Buffer, n int, p AdamWParams)

	// Sample draws one token per row of logits [N,V] with uniforms u [N]
	// (host) into ids [N] (host). See SampleParams.
	Sample(ids []int32, logits Buffer, u []float32, N, V int, p SampleParams)
}

// Mapper is implemented by backends whose buffers are host memory (the CPU
// backend). Map wraps raw, len(raw)/dt.Size() little-endian elements, as a
// read-only Buffer without copying, for instance a read-only mmap of a
// safetensors file. raw must stay valid and unchanged until the buffer is
// freed; Free forgets it and never frees or writes it. Every op that would
// write a mapped buffer or a view of one (as an output, in-place state, or
// the destination of CopyIn, Upload, Fill or Copy) records an error and
// writes nothing. Map fails when raw's address is not a multiple of the
// element size or its length not a multiple of it; the caller then falls
// back to Alloc and Upload.
type Mapper interface {
	Map(dt DType, raw []byte) (Buffer, error)
}

// MemReporter is implemented by backends whose allocator keeps statistics
// (the CUDA backend's pool): MemReport is one line, printed when a run
// closes the backend.
type MemReporter interface {
	MemReport() string
}

// StepGraphs is implemented by backends that can replay one step's ops as
// a graph (the CUDA backend's decode graphs, kernels/cuda/graph.go):
// GraphStep runs fn, which issues the ops of one step, as the graph of
// key; the caller keeps every shape and buffer of a key's steps the same
// (only the contents of the int side inputs change). Results equal fn's
// run op by op.
type StepGraphs interface {
	StepGraphsOn() bool // whether GraphStep captures (else it just runs fn)
	GraphStep(key int, fn func())
}

// DeviceDraws is implemented by backends that draw tokens on the device
// and return a step's draws with one device→host copy (the CUDA backend,
// kernels/cuda/draws.go). DrawRows samples rows [0, N) of logits [N, V]
// with uniforms u [N] (host) into the step's draw slots [at, at+N) and
// computes their log-probs from the ids it drew, on the device (the ids
// never come up in between); the ids and log-probs equal those of Sample
// then LogProbs on the same rows. FetchDraws waits for the queued work,
// copies the ids and log-probs of slots [0, len(ids)) into ids and lp
// (one copy, into page-locked host memory where the device has it) and,
// like Sync, returns and clears the first recorded error. Slots hold
// their draws until overwritten; a slot not drawn since is undefined.
type DeviceDraws interface {
	DrawRows(at int, logits Buffer, u []float32, N, V int, p SampleParams)
	FetchDraws(ids []int32, lp []float32) error
}

// BF16Activations is implemented by backends that want training graphs to
// keep the forward activations that backward reads in bf16 between the two
// passes (kernels/graph Config.StashBF16; about half the activation
// memory): the CUDA backend with bf16 activations ("cuda-bf16").
type BF16Activations interface {
	BF16Activations() bool
}

// BF16KVCache is implemented by backends whose attention reads keys and
// values in bf16 (the CUDA tensor-core modes): when BF16KVCache(headDim)
// is true, a decoder allocates its KV cache in BF16 (half the memory and
// bandwidth; KVWrite and KVScatter round each element), and training reads
// the same rounded values.
type BF16KVCache interface {
	BF16KVCache(headDim int) bool
}

// FusedProjections is implemented by backends that want each decoder
// layer's q, k and v projections, and its gate and up projections,
// computed as one GEMM each over weights concatenated at load (the CUDA
// backend: fewer, larger GEMMs). A model then keeps each member's weight as
// a view of the concatenation, so it holds no second copy. The CPU backend
// does not: it maps checkpoint weights in place, and concatenating them
// would be a second resident copy.
type FusedProjections interface {
	FusedProjections() bool
}

// DropoutUniform is the counter-based uniform in [0,1) shared by every
// backend, so masks are reproducible across devices:
// splitmix64(seed + i·0x9E3779B97F4A7C15), top 24 bits / 2²⁴.
func DropoutUniform(seed uint64, i int) float32 {
	z := seed + uint64(i)*0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	z ^= z >> 31
	return float32(z>>40) / (1 << 24)
}
