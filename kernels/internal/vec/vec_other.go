//go:build !amd64 || purego

package vec

// No assembly here: the *Vec functions do nothing and the reference loops
// in vec.go run on every element.

const hasAVX2, hasAVX512 = false, false

func expVec([]float32) int                                                { return 0 }
func expShiftVec(_, _ []float32, _, _ float32) int                        { return 0 }
func swigluVec(_, _, _ []float32) int                                     { return 0 }
func swigluBwdVec(_, _, _, _, _ []float32) int                            { return 0 }
func adamWVec(_, _, _, _ []float32, _ AdamWParams) int                    { return 0 }
func axpbyVec(_, _, _ []float32, _, _ float32) int                        { return 0 }
func dropoutVec(_, _ []float32, _ int, _ uint64, _ float32, _ uint64) int { return 0 }
