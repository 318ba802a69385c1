//go:build goexperiment.simd && amd64

package bert

import "simd/archsimd"

// Built with GOEXPERIMENT=simd on a CPU with AVX2 and FMA, the matrix
// product runs 8 lanes at a time (Go's experimental simd/archsimd
// package: still pure Go, no assembly and no cgo).
func init() {
	if archsimd.X86.AVX2() && archsimd.X86.FMA() {
		tileKernel = matMulTileSIMD
		kernelName = "avx2-fma"
		tileKernels[kernelName] = matMulTileSIMD
	}
}

// matMulTileSIMD is matMulTile in 8-lane vectors. Blocks of 2 rows × 4
// columns keep 8 accumulators, each summing a dot product 8 lanes wide
// with fused multiply-adds (the k%8 remainder as one more, zero-filled,
// step); horizontal adds then fold each row's 4 accumulators into the 4
// outputs. A single leftover row, and leftover columns (computed on a
// repeated column and not stored), go through the very same operations,
// so every output is computed identically wherever it is: results do not
// depend on the batch.
//
// Only vector instructions run between the first load and the last
// store, and the upper halves of the registers are cleared on return, so
// the scalar (SSE) code around it pays no AVX transition penalty.
func matMulTileSIMD(dst, a, b []float32, n, k, i0, i1, j0, j1 int, bias []float32) {
	defer archsimd.ClearAVXUpperBits()
	i := i0
	for ; i+2 <= i1; i += 2 {
		a0 := a[i*k : i*k+k]
		a1 := a[(i+1)*k : (i+1)*k+k]
		for j := j0; j < j1; j += 4 {
			nc := min(4, j1-j)
			b0, b1, b2, b3 := cols4(b, k, j, j1)
			r0, r1 := dot2x4(a0, a1, b0, b1, b2, b3)
			if bias != nil {
				bv := archsimd.LoadFloat32x4SlicePart(bias[j : j+nc])
				r0, r1 = r0.Add(bv), r1.Add(bv)
			}
			r0.StoreSlicePart(dst[i*n+j : i*n+j+nc])
			r1.StoreSlicePart(dst[(i+1)*n+j : (i+1)*n+j+nc])
		}
	}
	if i < i1 {
		a0 := a[i*k : i*k+k]
		for j := j0; j < j1; j += 4 {
			nc := min(4, j1-j)
			b0, b1, b2, b3 := cols4(b, k, j, j1)
			r0 := dot1x4(a0, b0, b1, b2, b3)
			if bias != nil {
				r0 = r0.Add(archsimd.LoadFloat32x4SlicePart(bias[j : j+nc]))
			}
			r0.StoreSlicePart(dst[i*n+j : i*n+j+nc])
		}
	}
}

// cols4 returns rows j..j+3 of b (k wide), repeating row j1-1 past j1.
func cols4(b []float32, k, j, j1 int) (b0, b1, b2, b3 []float32) {
	row := func(c int) []float32 {
		c = min(c, j1-1)
		return b[c*k : c*k+k]
	}
	return row(j), row(j + 1), row(j + 2), row(j + 3)
}

func dot2x4(a0, a1, b0, b1, b2, b3 []float32) (archsimd.Float32x4, archsimd.Float32x4) {
	k := len(a0)
	a1, b0, b1, b2, b3 = a1[:k], b0[:k], b1[:k], b2[:k], b3[:k]
	kv := k &^ 7
	var c00, c01, c02, c03, c10, c11, c12, c13 archsimd.Float32x8
	for p := 0; p < kv; p += 8 {
		x0 := archsimd.LoadFloat32x8((*[8]float32)(b0[p : p+8]))
		x1 := archsimd.LoadFloat32x8((*[8]float32)(b1[p : p+8]))
		x2 := archsimd.LoadFloat32x8((*[8]float32)(b2[p : p+8]))
		x3 := archsimd.LoadFloat32x8((*[8]float32)(b3[p : p+8]))
		y := archsimd.LoadFloat32x8((*[8]float32)(a0[p : p+8]))
		c00 = y.MulAdd(x0, c00)
		c01 = y.MulAdd(x1, c01)
		c02 = y.MulAdd(x2, c02)
		c03 = y.MulAdd(x3, c03)
		y = archsimd.LoadFloat32x8((*[8]float32)(a1[p : p+8]))
		c10 = y.MulAdd(x0, c10)
		c11 = y.MulAdd(x1, c11)
		c12 = y.MulAdd(x2, c12)
		c13 = y.MulAdd(x3, c13)
	}
	if kv < k {
		x0 := archsimd.LoadFloat32x8SlicePart(b0[kv:])
		x1 := archsimd.LoadFloat32x8SlicePart(b1[kv:])
		x2 := archsimd.LoadFloat32x8SlicePart(b2[kv:])
		x3 := archsimd.LoadFloat32x8SlicePart(b3[kv:])
		y := archsimd.LoadFloat32x8SlicePart(a0[kv:])
		c00 = y.MulAdd(x0, c00)
		c01 = y.MulAdd(x1, c01)
		c02 = y.MulAdd(x2, c02)
		c03 = y.MulAdd(x3, c03)
		y = archsimd.LoadFloat32x8SlicePart(a1[kv:])
		c10 = y.MulAdd(x0, c10)
		c11 = y.MulAdd(x1, c11)
		c12 = y.MulAdd(x2, c12)
		c13 = y.MulAdd(x3, c13)
	}
	return fold4(c00, c01, c02, c03), fold4(c10, c11, c12, c13)
}

func dot1x4(a0, b0, b1, b2, b3 []float32) archsimd.Float32x4 {
	k := len(a0)
	b0, b1, b2, b3 = b0[:k], b1[:k], b2[:k], b3[:k]
	kv := k &^ 7
	var c0, c1, c2, c3 archsimd.Float32x8
	for p := 0; p < kv; p += 8 {
		y := archsimd.LoadFloat32x8((*[8]float32)(a0[p : p+8]))
		c0 = y.MulAdd(archsimd.LoadFloat32x8((*[8]float32)(b0[p:p+8])), c0)
		c1 = y.MulAdd(archsimd.LoadFloat32x8((*[8]float32)(b1[p:p+8])), c1)
		c2 = y.MulAdd(archsimd.LoadFloat32x8((*[8]float32)(b2[p:p+8])), c2)
		c3 = y.MulAdd(archsimd.LoadFloat32x8((*[8]float32)(b3[p:p+8])), c3)
	}
	if kv < k {
		y := archsimd.LoadFloat32x8SlicePart(a0[kv:])
		c0 = y.MulAdd(archsimd.LoadFloat32x8SlicePart(b0[kv:]), c0)
		c1 = y.MulAdd(archsimd.LoadFloat32x8SlicePart(b1[kv:]), c1)
		c2 = y.MulAdd(archsimd.LoadFloat32x8SlicePart(b2[kv:]), c2)
		c3 = y.MulAdd(archsimd.LoadFloat32x8SlicePart(b3[kv:]), c3)
	}
	return fold4(c0, c1, c2, c3)
}

// fold4 returns the lane sums of c0..c3: [Σc0, Σc1, Σc2, Σc3].
func fold4(c0, c1, c2, c3 archsimd.Float32x8) archsimd.Float32x4 {
	u := c0.AddPairsGrouped(c1).AddPairsGrouped(c2.AddPairsGrouped(c3))
	return u.GetLo().Add(u.GetHi())
}
