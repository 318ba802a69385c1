//go:build goexperiment.simd && amd64

package uselite

import "simd/archsimd"

// Built with GOEXPERIMENT=simd on a CPU with AVX2 and FMA, the dense
// layers run on a register-blocked kernel over weights packed in panels
// of 16 columns: each step broadcasts one input value per row and
// multiply-adds it into two 8-lane accumulators per row, so every weight
// loaded serves four rows and no horizontal sums are needed.
//
// With AVX-512 the same scheme runs 16 lanes wide over panels of 32
// columns: half the instructions for the same work.
func init() {
	if !setKernel("avx512") {
		setKernel("avx2")
	}
}

// kernels lists the packed kernels this CPU can run, best first.
func kernels() []string {
	var out []string
	for _, k := range []string{"avx512", "avx2"} {
		if supported(k) {
			out = append(out, k)
		}
	}
	return out
}

func supported(name string) bool {
	switch name {
	case "avx512":
		return archsimd.X86.AVX512()
	case "avx2":
		return archsimd.X86.AVX2() && archsimd.X86.FMA()
	}
	return name == ""
}

// setKernel selects the kernel models loaded afterwards use ("" for
// bert.MatMulT); false if the CPU cannot run it.
func setKernel(name string) bool {
	if !supported(name) {
		return false
	}
	switch name {
	case "avx512":
		current = kernel{name: name, width: 32, k4: kernel4x32, k1: kernel1x32}
	case "avx2":
		current = kernel{name: name, width: 16, k4: kernel4x16, k1: kernel1x16}
	default:
		current = kernel{}
	}
	return true
}

// kernel4x16 computes 4 rows × 16 columns: dst rows at stride ldd, a rows
// (k = len(panel)/16 values) at stride lda. The loop is unrolled four
// steps deep (about 40 % more work a cycle on the development machine:
// fewer register moves and bounds checks a step); the steps still run in
// order, so every output is the same multiply-add chain as kernel1x16's.
func kernel4x16(dst []float32, ldd int, a []float32, lda int, panel, bias []float32, epi int) {
	defer archsimd.ClearAVXUpperBits()
	k := len(panel) / 16
	a0 := a[:k]
	a1 := a[lda : lda+k]
	a2 := a[2*lda : 2*lda+k]
	a3 := a[3*lda : 3*lda+k]
	var c00, c01, c10, c11, c20, c21, c30, c31, b0, b1, x archsimd.Float32x8
	p := 0
	for ; p+4 <= k; p += 4 {
		w := (*[64]float32)(panel[p*16 : p*16+64])
		b0 = archsimd.LoadFloat32x8((*[8]float32)(w[0:8]))
		b1 = archsimd.LoadFloat32x8((*[8]float32)(w[8:16]))
		x = archsimd.BroadcastFloat32x8(a0[p])
		c00 = x.MulAdd(b0, c00)
		c01 = x.MulAdd(b1, c01)
		x = archsimd.BroadcastFloat32x8(a1[p])
		c10 = x.MulAdd(b0, c10)
		c11 = x.MulAdd(b1, c11)
		x = archsimd.BroadcastFloat32x8(a2[p])
		c20 = x.MulAdd(b0, c20)
		c21 = x.MulAdd(b1, c21)
		x = archsimd.BroadcastFloat32x8(a3[p])
		c30 = x.MulAdd(b0, c30)
		c31 = x.MulAdd(b1, c31)
		b0 = archsimd.LoadFloat32x8((*[8]float32)(w[16:24]))
		b1 = archsimd.LoadFloat32x8((*[8]float32)(w[24:32]))
		x = archsimd.BroadcastFloat32x8(a0[p+1])
		c00 = x.MulAdd(b0, c00)
		c01 = x.MulAdd(b1, c01)
		x = archsimd.BroadcastFloat32x8(a1[p+1])
		c10 = x.MulAdd(b0, c10)
		c11 = x.MulAdd(b1, c11)
		x = archsimd.BroadcastFloat32x8(a2[p+1])
		c20 = x.MulAdd(b0, c20)
		c21 = x.MulAdd(b1, c21)
		x = archsimd.BroadcastFloat32x8(a3[p+1])
		c30 = x.MulAdd(b0, c30)
		c31 = x.MulAdd(b1, c31)
		b0 = archsimd.LoadFloat32x8((*[8]float32)(w[32:40]))
		b1 = archsimd.LoadFloat32x8((*[8]float32)(w[40:48]))
		x = archsimd.BroadcastFloat32x8(a0[p+2])
		c00 = x.MulAdd(b0, c00)
		c01 = x.MulAdd(b1, c01)
		x = archsimd.BroadcastFloat32x8(a1[p+2])
		c10 = x.MulAdd(b0, c10)
		c11 = x.MulAdd(b1, c11)
		x = archsimd.BroadcastFloat32x8(a2[p+2])
		c20 = x.MulAdd(b0, c20)
		c21 = x.MulAdd(b1, c21)
		x = archsimd.BroadcastFloat32x8(a3[p+2])
		c30 = x.MulAdd(b0, c30)
		c31 = x.MulAdd(b1, c31)
		b0 = archsimd.LoadFloat32x8((*[8]float32)(w[48:56]))
		b1 = archsimd.LoadFloat32x8((*[8]float32)(w[56:64]))
		x = archsimd.BroadcastFloat32x8(a0[p+3])
		c00 = x.MulAdd(b0, c00)
		c01 = x.MulAdd(b1, c01)
		x = archsimd.BroadcastFloat32x8(a1[p+3])
		c10 = x.MulAdd(b0, c10)
		c11 = x.MulAdd(b1, c11)
		x = archsimd.BroadcastFloat32x8(a2[p+3])
		c20 = x.MulAdd(b0, c20)
		c21 = x.MulAdd(b1, c21)
		x = archsimd.BroadcastFloat32x8(a3[p+3])
		c30 = x.MulAdd(b0, c30)
		c31 = x.MulAdd(b1, c31)
	}
	for ; p < k; p++ {
		w := (*[16]float32)(panel[p*16 : p*16+16])
		b0 = archsimd.LoadFloat32x8((*[8]float32)(w[0:8]))
		b1 = archsimd.LoadFloat32x8((*[8]float32)(w[8:16]))
		x = archsimd.BroadcastFloat32x8(a0[p])
		c00 = x.MulAdd(b0, c00)
		c01 = x.MulAdd(b1, c01)
		x = archsimd.BroadcastFloat32x8(a1[p])
		c10 = x.MulAdd(b0, c10)
		c11 = x.MulAdd(b1, c11)
		x = archsimd.BroadcastFloat32x8(a2[p])
		c20 = x.MulAdd(b0, c20)
		c21 = x.MulAdd(b1, c21)
		x = archsimd.BroadcastFloat32x8(a3[p])
		c30 = x.MulAdd(b0, c30)
		c31 = x.MulAdd(b1, c31)
	}
	bv0 := archsimd.LoadFloat32x8((*[8]float32)(bias[0:8]))
	bv1 := archsimd.LoadFloat32x8((*[8]float32)(bias[8:16]))
	store(dst[0:16], c00, c01, bv0, bv1, epi)
	store(dst[ldd:ldd+16], c10, c11, bv0, bv1, epi)
	store(dst[2*ldd:2*ldd+16], c20, c21, bv0, bv1, epi)
	store(dst[3*ldd:3*ldd+16], c30, c31, bv0, bv1, epi)
}

// kernel1x16 computes 1 row × 16 columns with the same operations.
func kernel1x16(dst []float32, a []float32, panel, bias []float32, epi int) {
	defer archsimd.ClearAVXUpperBits()
	k := len(panel) / 16
	a = a[:k]
	var c0, c1 archsimd.Float32x8
	for p := range k {
		w := panel[p*16 : p*16+16]
		b0 := archsimd.LoadFloat32x8((*[8]float32)(w[0:8]))
		b1 := archsimd.LoadFloat32x8((*[8]float32)(w[8:16]))
		x := archsimd.BroadcastFloat32x8(a[p])
		c0 = x.MulAdd(b0, c0)
		c1 = x.MulAdd(b1, c1)
	}
	bv0 := archsimd.LoadFloat32x8((*[8]float32)(bias[0:8]))
	bv1 := archsimd.LoadFloat32x8((*[8]float32)(bias[8:16]))
	store(dst[0:16], c0, c1, bv0, bv1, epi)
}

// store writes one row's 16 outputs with the bias and the epilogue.
func store(dst []float32, c0, c1, b0, b1 archsimd.Float32x8, epi int) {
	d0 := (*[8]float32)(dst[0:8])
	d1 := (*[8]float32)(dst[8:16])
	c0, c1 = c0.Add(b0), c1.Add(b1)
	switch epi {
	case epiReLU:
		var zero archsimd.Float32x8
		c0, c1 = c0.Max(zero), c1.Max(zero)
	case epiAdd:
		c0 = c0.Add(archsimd.LoadFloat32x8(d0))
		c1 = c1.Add(archsimd.LoadFloat32x8(d1))
	}
	c0.Store(d0)
	c1.Store(d1)
}

// kernel4x32 is kernel4x16 on 16-lane vectors, over panels of 32 columns.
func kernel4x32(dst []float32, ldd int, a []float32, lda int, panel, bias []float32, epi int) {
	defer archsimd.ClearAVXUpperBits()
	k := len(panel) / 32
	a0 := a[:k]
	a1 := a[lda : lda+k]
	a2 := a[2*lda : 2*lda+k]
	a3 := a[3*lda : 3*lda+k]
	var c00, c01, c10, c11, c20, c21, c30, c31, b0, b1, x archsimd.Float32x16
	p := 0
	for ; p+4 <= k; p += 4 {
		w := (*[128]float32)(panel[p*32 : p*32+128])
		b0 = archsimd.LoadFloat32x16((*[16]float32)(w[0:16]))
		b1 = archsimd.LoadFloat32x16((*[16]float32)(w[16:32]))
		x = archsimd.BroadcastFloat32x16(a0[p])
		c00 = x.MulAdd(b0, c00)
		c01 = x.MulAdd(b1, c01)
		x = archsimd.BroadcastFloat32x16(a1[p])
		c10 = x.MulAdd(b0, c10)
		c11 = x.MulAdd(b1, c11)
		x = archsimd.BroadcastFloat32x16(a2[p])
		c20 = x.MulAdd(b0, c20)
		c21 = x.MulAdd(b1, c21)
		x = archsimd.BroadcastFloat32x16(a3[p])
		c30 = x.MulAdd(b0, c30)
		c31 = x.MulAdd(b1, c31)
		b0 = archsimd.LoadFloat32x16((*[16]float32)(w[32:48]))
		b1 = archsimd.LoadFloat32x16((*[16]float32)(w[48:64]))
		x = archsimd.BroadcastFloat32x16(a0[p+1])
		c00 = x.MulAdd(b0, c00)
		c01 = x.MulAdd(b1, c01)
		x = archsimd.BroadcastFloat32x16(a1[p+1])
		c10 = x.MulAdd(b0, c10)
		c11 = x.MulAdd(b1, c11)
		x = archsimd.BroadcastFloat32x16(a2[p+1])
		c20 = x.MulAdd(b0, c20)
		c21 = x.MulAdd(b1, c21)
		x = archsimd.BroadcastFloat32x16(a3[p+1])
		c30 = x.MulAdd(b0, c30)
		c31 = x.MulAdd(b1, c31)
		b0 = archsimd.LoadFloat32x16((*[16]float32)(w[64:80]))
		b1 = archsimd.LoadFloat32x16((*[16]float32)(w[80:96]))
		x = archsimd.BroadcastFloat32x16(a0[p+2])
		c00 = x.MulAdd(b0, c00)
		c01 = x.MulAdd(b1, c01)
		x = archsimd.BroadcastFloat32x16(a1[p+2])
		c10 = x.MulAdd(b0, c10)
		c11 = x.MulAdd(b1, c11)
		x = archsimd.BroadcastFloat32x16(a2[p+2])
		c20 = x.MulAdd(b0, c20)
		c21 = x.MulAdd(b1, c21)
		x = archsimd.BroadcastFloat32x16(a3[p+2])
		c30 = x.MulAdd(b0, c30)
		c31 = x.MulAdd(b1, c31)
		b0 = archsimd.LoadFloat32x16((*[16]float32)(w[96:112]))
		b1 = archsimd.LoadFloat32x16((*[16]float32)(w[112:128]))
		x = archsimd.BroadcastFloat32x16(a0[p+3])
		c00 = x.MulAdd(b0, c00)
		c01 = x.MulAdd(b1, c01)
		x = archsimd.BroadcastFloat32x16(a1[p+3])
		c10 = x.MulAdd(b0, c10)
		c11 = x.MulAdd(b1, c11)
		x = archsimd.BroadcastFloat32x16(a2[p+3])
		c20 = x.MulAdd(b0, c20)
		c21 = x.MulAdd(b1, c21)
		x = archsimd.BroadcastFloat32x16(a3[p+3])
		c30 = x.MulAdd(b0, c30)
		c31 = x.MulAdd(b1, c31)
	}
	for ; p < k; p++ {
		w := (*[32]float32)(panel[p*32 : p*32+32])
		b0 = archsimd.LoadFloat32x16((*[16]float32)(w[0:16]))
		b1 = archsimd.LoadFloat32x16((*[16]float32)(w[16:32]))
		x = archsimd.BroadcastFloat32x16(a0[p])
		c00 = x.MulAdd(b0, c00)
		c01 = x.MulAdd(b1, c01)
		x = archsimd.BroadcastFloat32x16(a1[p])
		c10 = x.MulAdd(b0, c10)
		c11 = x.MulAdd(b1, c11)
		x = archsimd.BroadcastFloat32x16(a2[p])
		c20 = x.MulAdd(b0, c20)
		c21 = x.MulAdd(b1, c21)
		x = archsimd.BroadcastFloat32x16(a3[p])
		c30 = x.MulAdd(b0, c30)
		c31 = x.MulAdd(b1, c31)
	}
	bv0 := archsimd.LoadFloat32x16((*[16]float32)(bias[0:16]))
	bv1 := archsimd.LoadFloat32x16((*[16]float32)(bias[16:32]))
	store32(dst[0:32], c00, c01, bv0, bv1, epi)
	store32(dst[ldd:ldd+32], c10, c11, bv0, bv1, epi)
	store32(dst[2*ldd:2*ldd+32], c20, c21, bv0, bv1, epi)
	store32(dst[3*ldd:3*ldd+32], c30, c31, bv0, bv1, epi)
}

// kernel1x32 computes 1 row × 32 columns with the same operations.
func kernel1x32(dst []float32, a []float32, panel, bias []float32, epi int) {
	defer archsimd.ClearAVXUpperBits()
	k := len(panel) / 32
	a = a[:k]
	var c0, c1 archsimd.Float32x16
	for p := range k {
		w := panel[p*32 : p*32+32]
		b0 := archsimd.LoadFloat32x16((*[16]float32)(w[0:16]))
		b1 := archsimd.LoadFloat32x16((*[16]float32)(w[16:32]))
		x := archsimd.BroadcastFloat32x16(a[p])
		c0 = x.MulAdd(b0, c0)
		c1 = x.MulAdd(b1, c1)
	}
	bv0 := archsimd.LoadFloat32x16((*[16]float32)(bias[0:16]))
	bv1 := archsimd.LoadFloat32x16((*[16]float32)(bias[16:32]))
	store32(dst[0:32], c0, c1, bv0, bv1, epi)
}

// store32 writes one row's 32 outputs with the bias and the epilogue.
func store32(dst []float32, c0, c1, b0, b1 archsimd.Float32x16, epi int) {
	d0 := (*[16]float32)(dst[0:16])
	d1 := (*[16]float32)(dst[16:32])
	c0, c1 = c0.Add(b0), c1.Add(b1)
	switch epi {
	case epiReLU:
		var zero archsimd.Float32x16
		c0, c1 = c0.Max(zero), c1.Max(zero)
	case epiAdd:
		c0 = c0.Add(archsimd.LoadFloat32x16(d0))
		c1 = c1.Add(archsimd.LoadFloat32x16(d1))
	}
	c0.Store(d0)
	c1.Store(d1)
}
