//go:build goexperiment.simd && amd64

package ann

import "simd/archsimd"

// Built with GOEXPERIMENT=simd on a CPU with AVX2 and FMA but not AVX-512
// (codes_simd.go's dotAVX512 needs AVX-512), the graph's dense dot
// products are computed 8 lanes at a time: they are most of an Add's CPU
// (and of a walk's on the vectors, where the codes are not given), and
// the portable loop costs ~3 times as much on such a CPU. Such a CPU's
// scans and walks use the codes' AVX2 kernels (codes_avx2.go).
func init() {
	if !archsimd.X86.AVX512() && archsimd.X86.AVX2() && archsimd.X86.FMA() {
		dotKernel, dotName = dotAVX2, "avx2"
	}
}

// dotAVX2 is dotPortable 32 components at a time in four 8-lane fused
// multiply-add registers; the rest in plain Go.
func dotAVX2(a, b []float32) float32 {
	b = b[:len(a)]
	if len(a) < 32 {
		return dotPortable(a, b)
	}
	defer archsimd.ClearAVXUpperBits()
	var s0, s1, s2, s3 archsimd.Float32x8
	i := 0
	for ; i+32 <= len(a); i += 32 {
		s0 = archsimd.LoadFloat32x8((*[8]float32)(a[i:i+8])).MulAdd(archsimd.LoadFloat32x8((*[8]float32)(b[i:i+8])), s0)
		s1 = archsimd.LoadFloat32x8((*[8]float32)(a[i+8:i+16])).MulAdd(archsimd.LoadFloat32x8((*[8]float32)(b[i+8:i+16])), s1)
		s2 = archsimd.LoadFloat32x8((*[8]float32)(a[i+16:i+24])).MulAdd(archsimd.LoadFloat32x8((*[8]float32)(b[i+16:i+24])), s2)
		s3 = archsimd.LoadFloat32x8((*[8]float32)(a[i+24:i+32])).MulAdd(archsimd.LoadFloat32x8((*[8]float32)(b[i+24:i+32])), s3)
	}
	var lanes [8]float32
	s0.Add(s1).Add(s2.Add(s3)).Store(&lanes)
	var s float32
	for _, x := range lanes {
		s += x
	}
	for ; i < len(a); i++ {
		s += a[i] * b[i]
	}
	return s
}
