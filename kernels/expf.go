package kernels

import "math"

// expf is a float32 exp accurate to about 1 ulp (Cephes' minimax
// polynomial after reduction by n·ln2), several times faster than
// float32(math.Exp(float64(x))). Results below the smallest normal float32
// flush to 0.
func expf(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		c1    = 0.693359375
		c2    = -2.12194440e-4
	)
	if x > 88.72283 {
		return float32(math.Inf(1))
	}
	if x < -87.33654 {
		return 0
	}
	if x != x {
		return x
	}
	t := x*log2e + 0.5
	n := int32(t)
	if t < float32(n) { // floor for negatives
		n--
	}
	fn := float32(n)
	r := x - fn*c1 - fn*c2
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	p = p*r*r + r + 1
	if n > 127 {
		return p * 2 * math.Float32frombits(254<<23)
	}
	return p * math.Float32frombits(uint32(n+127)<<23)
}
