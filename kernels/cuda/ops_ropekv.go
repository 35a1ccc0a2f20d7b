package cuda

import "github.com/argrl/argrl/kernels"

var _ kernels.RoPEKVWriter = (*Backend)(nil)

// BiasRoPEKV is the decode step's attention prologue in one launch
// (rope.cu rope_kv; kernels.RefBiasRoPEKV): the same bits as add_bias,
// rope and kv_scatter run one after another.
func (be *Backend) BiasRoPEKV(qOut, kCache, vCache, q, k, v, qBias, kBias, vBias, cos, sin kernels.Buffer, p kernels.RoPEKVParams) {
	o := be.begin("BiasRoPEKV")
	defer o.end()
	N, Hq, Hkv, D, Tmax := p.N, p.Hq, p.Hkv, p.D, p.Tmax
	o.Dims("N, Hq, Hkv, D, Tmax", N, Hq, Hkv, D, Tmax)
	if D%2 != 0 {
		o.Failf("head dim D = %d is odd", D)
	}
	o.Side("pos", len(p.Pos), N)
	o.Side("page", len(p.Page), N)
	o.Side("off", len(p.Off), N)
	qo := o.out("qOut", qOut, N*Hq*D)
	qp, kp, vp := o.in("q", q, N*Hq*D), o.in("k", k, N*Hkv*D), o.in("v", v, N*Hkv*D)
	bias := func(name string, b kernels.Buffer, n int) devPtr {
		if b == nil {
			return 0
		}
		return o.in(name, b, n)
	}
	qb, kb, vb := bias("qBias", qBias, Hq*D), bias("kBias", kBias, Hkv*D), bias("vBias", vBias, Hkv*D)
	kc, vc := o.buf("kCache", kCache, 0, kernels.WriteAny), o.buf("vCache", vCache, 0, kernels.WriteAny)
	c, s := o.buf("cos", cos, 0, kernels.Read), o.buf("sin", sin, 0, kernels.Read)
	if o.Bad {
		return
	}
	if kc.dt != vc.dt || kc.n != vc.n {
		o.Failf("kCache is %d×%v, vCache %d×%v", kc.n, kc.dt, vc.n, vc.dt)
	}
	if o.Skip(N, Hq+Hkv, D) {
		return
	}
	S := 0
	if Tmax > 0 && Hkv > 0 {
		S = kc.n / (Tmax * Hkv * D)
	}
	P := min(c.n, s.n) / (D / 2)
	if !o.IDs("pos", p.Pos[:N], P) || !o.KVPages(p.Page[:N], p.Off[:N], S, Tmax) {
		return
	}
	cp, sp := o.in("cos", cos, P*D/2), o.in("sin", sin, P*D/2)
	meta := make([]int32, 3*N)
	copy(meta, p.Pos[:N])
	copy(meta[N:], p.Page[:N])
	copy(meta[2*N:], p.Off[:N])
	kernel := "rope_kv"
	if kc.dt == kernels.BF16 {
		kernel = "rope_kv_bf16"
	}
	o.launch(kernel, grid1(int64(N)*int64(Hq+2*Hkv)*int64(D/2)), block1, pArg(qo), pArg(kc.ptr()), pArg(vc.ptr()),
		pArg(qp), pArg(kp), pArg(vp), pArg(qb), pArg(kb), pArg(vb), pArg(cp), pArg(sp), pArg(o.ints(meta)),
		iArg(N), iArg(Hq), iArg(Hkv), iArg(D), iArg(Tmax))
}
