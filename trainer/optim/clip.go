package optim

// Global grad norm, as torch.nn.utils.clip_grad_norm_ computes it:
// ‖g‖ = sqrt(Σ_p Σ_i g²), one Backend.Dot per param into a scratch vector,
// read back once, summed in float64. Clipping multiplies every G by
// max/(‖g‖+1e-6) when that is < 1 (AXPBY in place).

import (
	"fmt"
	"math"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
)

// GradNorm returns the global L2 norm of the params' gradients.
func GradNorm(be kernels.Backend, params []*model.Param) (float64, error) {
	if len(params) == 0 {
		return 0, nil
	}
	scratch := be.Alloc(kernels.F32, len(params))
	defer be.Free(scratch)
	for i, p := range params {
		be.Dot(be.View(scratch, i, 1), p.G, p.G, numel(p))
	}
	sq := make([]float32, len(params))
	be.CopyOut(sq, scratch)
	if err := be.Sync(); err != nil {
		return 0, fmt.Errorf("grad norm: %w", err)
	}
	var s float64
	for _, v := range sq {
		s += float64(v)
	}
	return math.Sqrt(s), nil
}

// ClipGradNorm computes the global grad norm and, when maxNorm > 0 and the
// norm exceeds it, scales every gradient by maxNorm/(norm+1e-6). It returns
// the norm before clipping. A non-finite norm leaves the gradients as they
// are (the caller's NaN guard stops the run).
func ClipGradNorm(be kernels.Backend, params []*model.Param, maxNorm float64) (float64, error) {
	norm, err := GradNorm(be, params)
	if err != nil {
		return norm, err
	}
	if maxNorm <= 0 || math.IsNaN(norm) || math.IsInf(norm, 0) {
		return norm, nil
	}
	if c := maxNorm / (norm + 1e-6); c < 1 {
		for _, p := range params {
			be.AXPBY(p.G, p.G, nil, float32(c), 0, numel(p))
		}
		if err := be.Sync(); err != nil {
			return norm, fmt.Errorf("grad clip: %w", err)
		}
	}
	return norm, nil
}
