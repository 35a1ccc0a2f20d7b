package cuda

import (
	"errors"
	"fmt"

	"github.com/argrl/argrl/kernels"
)

// Device draws (kernels.DeviceDraws): a rollout step samples its rows on
// the device and computes their log-probs there from the drawn ids, into
// one device block laid out as
//
//	ids [cap] int32 | lp [cap] f32
//
// and FetchDraws brings slots [0, n) back with one device→host copy of the
// block's first (cap+n)·4 bytes into a page-locked mirror (cuMemHostAlloc,
// where the device has it; ordinary memory otherwise). Per step that is
// one copy instead of Sample's and CopyOut's two, and no host→device copy
// of the ids for LogProbs. The kernels and their inputs are Sample's and
// LogProbs', so the results are theirs bit for bit.

// drawBuf is the draw block and its host mirror.
type drawBuf struct {
	dev    devPtr
	size   int64 // the pool's size class of dev
	cap    int   // slots
	host   []byte
	pinned bool // host came from hostAlloc
}

var _ kernels.DeviceDraws = (*Backend)(nil)

// DrawRows: see kernels.DeviceDraws.
func (be *Backend) DrawRows(at int, logits kernels.Buffer, u []float32, N, V int, p kernels.SampleParams) {
	o := be.begin("DrawRows")
	defer o.end()
	o.Sample(N, u, N, V, p)
	if at < 0 || at > 1<<24 {
		o.Failf("slot %d outside [0, %d]", at, 1<<24)
	}
	xp := o.in("logits", logits, N*V)
	lx, kernel := o.logitsIn(logits, N*V, "logprobs_fwd") // as LogProbs reads them (bf16 in place)
	if o.Skip(N) {
		return
	}
	if !o.check(be.growDraws(at + N)) {
		return
	}
	d := &be.draws
	idp := d.dev + devPtr(at*4)
	lpp := d.dev + devPtr((d.cap+at)*4)
	o.sampleRows(idp, xp, u, N, V, p)
	o.logProbsRows(lpp, o.scratch(int64(N)*4), 0, lx, idp, kernel, N, V)
}

// FetchDraws: see kernels.DeviceDraws.
func (be *Backend) FetchDraws(ids []int32, lp []float32) error {
	be.mu.Lock()
	defer be.mu.Unlock()
	n := len(ids)
	d := &be.draws
	if len(lp) != n || n > d.cap {
		be.fail(fmt.Errorf("%s: FetchDraws: %d ids and %d log-probs; want equal lengths of at most the %d slots drawn into",
			be.dev.name(), n, len(lp), d.cap))
	} else if n == 0 {
		if err := be.dev.sync(); err != nil {
			be.fail(fmt.Errorf("%s: FetchDraws: %w", be.dev.name(), err))
		}
		be.uploading = false
	} else {
		b := d.host[:(d.cap+n)*4]
		if err := be.dev.dtoh(b, d.dev); err != nil {
			be.fail(fmt.Errorf("%s: FetchDraws: %w", be.dev.name(), err))
		} else {
			// the copy waited for the stream: the arena's last upload is done
			be.uploading = false
			copy(i32bytes(ids), b[:n*4])
			copy(f32bytes(lp), b[d.cap*4:])
		}
	}
	err := be.err
	be.err = nil
	return err
}

// growDraws makes room for slots [0, n), keeping the slots drawn so far
// (be.mu held).
func (be *Backend) growDraws(n int) error {
	d := &be.draws
	if n <= d.cap {
		return nil
	}
	c := max(n, 2*d.cap, 64)
	p, size, err := be.pool.get(int64(c) * 8)
	if err != nil {
		return fmt.Errorf("draw slots: %w", err)
	}
	var host []byte
	gd, pinned := be.dev.(graphDevice)
	pinned = pinned && gd.canPin()
	if pinned {
		if host, err = gd.hostAlloc(c * 8); err != nil {
			be.pool.put(p, size)
			return fmt.Errorf("pinned draw slots: %w", err)
		}
	} else {
		host = make([]byte, c*8) // a driver without cuMemHostAlloc: pageable
	}
	if d.cap > 0 {
		err = errors.Join(be.dev.dtod(p, d.dev, int64(d.cap)*4), be.dev.dtod(p+devPtr(c*4), d.dev+devPtr(d.cap*4), int64(d.cap)*4))
	}
	err = errors.Join(err, be.releaseDraws())
	*d = drawBuf{dev: p, size: size, cap: c, host: host, pinned: pinned}
	return err
}

// releaseDraws gives the draw block back (be.mu held).
func (be *Backend) releaseDraws() error {
	d := &be.draws
	var err error
	if d.dev != 0 {
		be.pool.put(d.dev, d.size)
	}
	if d.pinned {
		if gd, ok := be.dev.(graphDevice); ok {
			err = gd.hostFree(d.host)
		}
	}
	*d = drawBuf{}
	return err
}
