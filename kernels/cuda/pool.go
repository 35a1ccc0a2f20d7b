package cuda

import (
	"errors"
	"fmt"
)

// pool is a caching allocator: freed blocks go to a bin of their size class
// and are handed out again without a driver call (cuMemAlloc synchronizes
// the device and costs ~100 µs). Size classes: multiples of 512 B up to
// 1 MiB, multiples of 2 MiB above. All work runs on one stream, so a block
// freed after the kernels that use it were queued can be reused at once:
// later work is ordered after them. When the device is out of memory the
// cache is released and the allocation retried once.
type pool struct {
	dev    device
	bins   map[int64][]devPtr
	cached int64 // bytes sitting in bins
	inUse  int64 // bytes handed out
	peak   int64 // max of inUse

	gets, reused int64 // requests, and those served from a bin
	allocs       int64 // device allocations (cache misses)
	devBytes     int64 // bytes allocated from the device now
	devPeak      int64 // max of devBytes
}

func sizeClass(bytes int64) int64 {
	const small, big = 512, 2 << 20
	if bytes <= 0 {
		return small
	}
	if bytes <= 1<<20 {
		return (bytes + small - 1) / small * small
	}
	return (bytes + big - 1) / big * big
}

// get returns a block of at least bytes and the size to give back to put.
func (p *pool) get(bytes int64) (devPtr, int64, error) {
	size := sizeClass(bytes)
	p.gets++
	if l := p.bins[size]; len(l) > 0 {
		ptr := l[len(l)-1]
		p.bins[size] = l[:len(l)-1]
		p.cached -= size
		p.reused++
		p.take(size)
		return ptr, size, nil
	}
	ptr, err := p.dev.alloc(size)
	if err != nil && p.cached > 0 {
		if terr := p.trim(); terr != nil {
			return 0, 0, errors.Join(err, terr)
		}
		ptr, err = p.dev.alloc(size)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("allocate %d bytes (%d in use, peak %d): %w", size, p.inUse, p.peak, err)
	}
	p.allocs++
	p.devBytes += size
	p.devPeak = max(p.devPeak, p.devBytes)
	p.take(size)
	return ptr, size, nil
}

func (p *pool) take(size int64) {
	p.inUse += size
	p.peak = max(p.peak, p.inUse)
}

func (p *pool) put(ptr devPtr, size int64) {
	p.bins[size] = append(p.bins[size], ptr)
	p.cached += size
	p.inUse -= size
}

// trim returns every cached block to the device.
func (p *pool) trim() error {
	var errs []error
	if len(p.bins) > 0 {
		// queued work may still use a cached block
		if err := p.dev.sync(); err != nil {
			errs = append(errs, err)
		}
	}
	for size, l := range p.bins {
		for _, ptr := range l {
			if err := p.dev.free(ptr); err != nil {
				errs = append(errs, err)
			}
			p.devBytes -= size
		}
		delete(p.bins, size)
	}
	p.cached = 0
	return errors.Join(errs...)
}
