package cuda

import (
	"errors"
	"fmt"
)

// The emulator's graphs: a capture records the calls issued between
// beginCapture and endCapture with their argument values (launches
// checked as on a GPU, cuBLAS and cuBLASLt products as they are; none
// run); launchGraph re-issues the recorded list in
// order. Pinned host memory is ordinary memory (every copy is synchronous
// here).

// emuGraphs is the emulator's capture state and instantiated graphs.
type emuGraphs struct {
	capturing bool
	rec       []devCall
	graphs    map[graphHandle][]devCall
	next      graphHandle
}

var errEmuCapture = errors.New("not permitted while a stream is capturing (as cudaErrorStreamCaptureUnsupported)")

// record queues c when capturing; it reports whether it did.
func (d *emuDevice) record(c devCall) bool {
	if !d.g.capturing {
		return false
	}
	d.g.rec = append(d.g.rec, c)
	return true
}

func (d *emuDevice) beginCapture() error {
	if d.g.capturing {
		return errors.New("emulator: beginCapture: already capturing")
	}
	d.g.capturing, d.g.rec = true, nil
	return d.dead
}

func (d *emuDevice) endCapture() (graphHandle, error) {
	if !d.g.capturing {
		return 0, errors.New("emulator: endCapture: not capturing")
	}
	d.g.capturing = false
	if d.g.graphs == nil {
		d.g.graphs = map[graphHandle][]devCall{}
	}
	d.g.next++
	d.g.graphs[d.g.next], d.g.rec = d.g.rec, nil
	return d.g.next, d.dead
}

func (d *emuDevice) launchGraph(h graphHandle) error {
	calls, ok := d.g.graphs[h]
	if !ok {
		return fmt.Errorf("emulator: launchGraph: no graph %d", h)
	}
	if d.g.capturing {
		return errEmuCapture
	}
	for i := range calls {
		if err := calls[i].issue(d); err != nil {
			return fmt.Errorf("graph %d, call %d: %w", h, i, err)
		}
	}
	return nil
}

func (d *emuDevice) destroyGraph(h graphHandle) error {
	if _, ok := d.g.graphs[h]; !ok {
		return fmt.Errorf("emulator: destroyGraph: no graph %d", h)
	}
	delete(d.g.graphs, h)
	return nil
}

func (d *emuDevice) hostAlloc(bytes int) ([]byte, error) { return make([]byte, bytes), nil }
func (d *emuDevice) hostFree([]byte) error               { return nil }
func (d *emuDevice) canPin() bool                        { return true }

var _ graphDevice = (*emuDevice)(nil)
