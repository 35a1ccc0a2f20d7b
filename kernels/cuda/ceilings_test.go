package cuda

import "testing"

// TestCeilings runs gpu-check's two ceilings on the emulator: the copy
// moves the bytes, and the GEMM's product is checked against float64
// inside GEMMRate (a wrong layout or type fails it).
func TestCeilings(t *testing.T) {
	be := newEmu(t, EmuOptions{})
	bw, err := be.CopyRate(80<<20, 1, 1) // more than one 64 MiB fill block
	if err != nil || bw <= 0 {
		t.Fatalf("CopyRate: %v, %v", bw, err)
	}
	fl, err := be.GEMMRate(96, 1, 1)
	if err != nil || fl <= 0 {
		t.Fatalf("GEMMRate: %v, %v", fl, err)
	}
	t.Logf("emulator: copy %.2f GB/s, bf16 GEMM %.3f GFLOP/s", bw/1e9, fl/1e9)
	if _, err := be.GEMMRate(7, 1, 1); err == nil {
		t.Error("GEMMRate(7): odd n accepted")
	}
}
