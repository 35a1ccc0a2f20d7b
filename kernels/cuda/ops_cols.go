package cuda

import "github.com/argrl/argrl/kernels"

// Column blocks of the fused projections' outputs (kernels.ColumnBlocker):
// the embedding kernels over y seen as rows of g columns (as
// kernels.ColumnBlock does through Embedding), with each shape's row ids
// (kernels.ColumnRows) uploaded on first use and kept on the device until
// Close, where Embedding would upload them on every call (the q/k/v split
// of a 7B layer at 1,536 tokens: 10,752 ids, 42 KiB, above the small-input
// cache). Bytes and FLOPs as kernels.ColumnBlock's.

// colIDs is the device copy of a column block's row ids.
type colIDs struct {
	p    devPtr
	size int64 // pool size class
}

// ColumnBlock writes out [N, w] = columns [off, off+w) of y [N, W].
func (be *Backend) ColumnBlock(out, y kernels.Buffer, N, W, off, w int) {
	o := be.begin("ColumnBlock")
	defer o.end()
	o.Dims("N,W,off,w", N, W, off, w)
	if off+w > W {
		o.Failf("column block [%d, %d) of %d columns", off, off+w, W)
	}
	op := o.out("out", out, N*w)
	yb := o.buf("y", y, N*W, kernels.Read)
	if o.Skip(N, w) {
		return
	}
	g, ids := kernels.ColumnRows(N, W, off, w)
	k := "embedding_fwd"
	if yb.dt == kernels.BF16 {
		k = "embedding_fwd_bf16"
	}
	o.launch(k, grid1(int64(N*w)), block1, pArg(op), pArg(yb.ptr()), pArg(o.colIDs(N, W, off, w, ids)), iArg(len(ids)), iArg(g))
}

// ColumnBlockBackward writes dy [N, W] = dout [N, w] in columns [off,
// off+w) and 0 in the others.
func (be *Backend) ColumnBlockBackward(dy, dout kernels.Buffer, N, W, off, w int) {
	o := be.begin("ColumnBlockBackward")
	defer o.end()
	o.Dims("N,W,off,w", N, W, off, w)
	if off+w > W {
		o.Failf("column block [%d, %d) of %d columns", off, off+w, W)
	}
	dp := o.in("dout", dout, N*w)
	d := o.buf("dy", dy, N*W, kernels.Write)
	if o.Skip(N, W) {
		return
	}
	if !o.check(be.dev.memset32(d.ptr(), 0, int64(N*W))) || w == 0 {
		return
	}
	g, ids := kernels.ColumnRows(N, W, off, w)
	o.launch("embedding_bwd", grid1(int64(N*w)), block1, pArg(d.ptr()), pArg(dp), pArg(o.colIDs(N, W, off, w, ids)), iArg(len(ids)), iArg(g))
}

// colIDs returns the device copy of ids, the row ids of column block
// (N, W, off, w), uploading it on first use.
func (o *opCtx) colIDs(N, W, off, w int, ids []int32) devPtr {
	if o.Bad {
		return 0
	}
	key := [4]int{N, W, off, w}
	if c, ok := o.be.cols[key]; ok {
		return c.p
	}
	p, size, err := o.be.pool.get(int64(len(ids)) * 4)
	if err != nil {
		o.Failf("column ids: %v", err)
		return 0
	}
	if !o.check(o.be.dev.htod(p, i32bytes(ids))) {
		o.be.pool.put(p, size)
		return 0
	}
	if o.be.cols == nil {
		o.be.cols = map[[4]int]colIDs{}
	}
	o.be.cols[key] = colIDs{p, size}
	return p
}
