package uselite

// Portable versions of the packed kernels: what gemm_simd.go's compute
// (without fused multiply-adds), so tests can run the packed path in any
// build. Builds without GOEXPERIMENT=simd never pack (current is the zero
// kernel).

func kernel4Scalar(dst []float32, ldd int, a []float32, lda int, panel, bias []float32, epi int) {
	for r := range 4 {
		kernel1Scalar(dst[r*ldd:], a[r*lda:], panel, bias, epi)
	}
}

func kernel1Scalar(dst []float32, a []float32, panel, bias []float32, epi int) {
	w := len(bias)
	k := len(panel) / w
	c := make([]float32, w)
	for p := range k {
		x := a[p]
		for j, v := range panel[p*w : (p+1)*w] {
			c[j] += x * v
		}
	}
	for j := range c {
		v := c[j] + bias[j]
		switch epi {
		case epiReLU:
			v = max(v, 0)
		case epiAdd:
			v += dst[j]
		}
		dst[j] = v
	}
}
