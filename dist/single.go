package dist

import (
	"bytes"
	"sync"

	"github.com/argrl/argrl/kernels"
)

// single is the one-rank Comm: collectives check their arguments and
// change nothing.
type single struct {
	mu     sync.Mutex
	closed bool
}

// Single returns the Comm of a job of one process.
func Single() Comm { return &single{} }

func (s *single) Rank() int      { return 0 }
func (s *single) Size() int      { return 1 }
func (s *single) LocalRank() int { return 0 }

func (s *single) live() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}

func (s *single) AllReduce(be kernels.Backend, bufs ...kernels.Buffer) error {
	if err := s.live(); err != nil {
		return err
	}
	_, err := f32Lens("allreduce", be, bufs)
	return err
}

func (s *single) Broadcast(be kernels.Backend, root int, bufs ...kernels.Buffer) error {
	if err := s.live(); err != nil {
		return err
	}
	if err := checkRoot("broadcast", root, 1); err != nil {
		return err
	}
	_, err := f32Lens("broadcast", be, bufs)
	return err
}

func (s *single) BroadcastBytes(root int, b []byte) ([]byte, error) {
	if err := s.live(); err != nil {
		return nil, err
	}
	if err := checkRoot("broadcast bytes", root, 1); err != nil {
		return nil, err
	}
	return bytes.Clone(b), nil
}

func (s *single) AllGather(b []byte) ([][]byte, error) {
	if err := s.live(); err != nil {
		return nil, err
	}
	return [][]byte{bytes.Clone(b)}, nil
}

func (s *single) Barrier() error { return s.live() }

func (s *single) Check(err error) error {
	if e := s.live(); e != nil {
		return e
	}
	return err
}

func (s *single) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	return nil
}
