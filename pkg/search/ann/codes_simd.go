//go:build goexperiment.simd && amd64

package ann

import "simd/archsimd"

// Built with GOEXPERIMENT=simd on a CPU with AVX-512, a block's distances
// are computed 16 lanes at a time (Go's experimental simd/archsimd
// package: pure Go, no assembly, no cgo). A CPU with AVX2 and FMA but
// not AVX-512 gets 8-lane kernels of the same arithmetic (codes_avx2.go)
// and walks on the codes too.
func init() {
	if archsimd.X86.AVX512() {
		kern = kernelSet{"avx512", blockDistancesAVX512, addColumnsAVX512, finishDistancesAVX512}
		kernelName = "avx512"
		dotKernel = dotAVX512
		dotTilesKernel = dotTilesAVX512
		dotTiles2Kernel = dotTiles2AVX512
		walkOnCodes = true
	}
}

// blockDistancesAVX512 is blockDistances for a full group: the 64 lanes'
// sums stay in four 16-lane registers across the query's components (each
// column's codes widened to int32, converted, and multiplied in with one
// fused multiply-add), then the distances and the mask of lanes nearer
// than worst are computed in the same registers.
func blockDistancesAVX512(d *[blockSize]float32, b []int8, stride int, idx []int32, val []float32, scale, sqn []float32, qn, worst float32) uint64 {
	defer archsimd.ClearAVXUpperBits()
	var s0, s1, s2, s3 archsimd.Float32x16
	for j, i := range idx {
		col := (*[blockSize]int8)(b[int(i)*stride:])
		w := archsimd.BroadcastFloat32x16(val[j])
		s0 = archsimd.LoadInt8x16((*[16]int8)(col[0:16])).ExtendToInt32().ConvertToFloat32().MulAdd(w, s0)
		s1 = archsimd.LoadInt8x16((*[16]int8)(col[16:32])).ExtendToInt32().ConvertToFloat32().MulAdd(w, s1)
		s2 = archsimd.LoadInt8x16((*[16]int8)(col[32:48])).ExtendToInt32().ConvertToFloat32().MulAdd(w, s2)
		s3 = archsimd.LoadInt8x16((*[16]int8)(col[48:64])).ExtendToInt32().ConvertToFloat32().MulAdd(w, s3)
	}
	return finishRegs(d, s0, s1, s2, s3, scale, sqn, qn, worst)
}

// finishRegs computes a full group's distances and mask from its sums
// in four registers.
func finishRegs(d *[blockSize]float32, s0, s1, s2, s3 archsimd.Float32x16, scale, sqn []float32, qn, worst float32) uint64 {
	scale, sqn = scale[:blockSize], sqn[:blockSize]
	q := archsimd.BroadcastFloat32x16(qn)
	m2 := archsimd.BroadcastFloat32x16(-2)
	zero := archsimd.Float32x16{}
	wv := archsimd.BroadcastFloat32x16(worst)
	dist := func(s archsimd.Float32x16, off int) uint64 {
		sc := archsimd.LoadFloat32x16((*[16]float32)(scale[off : off+16]))
		sq := archsimd.LoadFloat32x16((*[16]float32)(sqn[off : off+16]))
		// max(0, (qn + sqn) − 2·(scale·s))
		x := sc.Mul(s).MulAdd(m2, q.Add(sq)).Max(zero)
		x.Store((*[16]float32)(d[off : off+16]))
		return uint64(x.Less(wv).ToBits()) << off
	}
	return dist(s0, 0) | dist(s1, 16) | dist(s2, 32) | dist(s3, 48)
}

// finishDistancesAVX512 is finishDistances for a full group, the sums
// loaded into the registers blockDistancesAVX512 keeps them in.
func finishDistancesAVX512(d *[blockSize]float32, sums *[blockSize]float32, scale, sqn []float32, qn, worst float32) uint64 {
	defer archsimd.ClearAVXUpperBits()
	s0 := archsimd.LoadFloat32x16((*[16]float32)(sums[0:16]))
	s1 := archsimd.LoadFloat32x16((*[16]float32)(sums[16:32]))
	s2 := archsimd.LoadFloat32x16((*[16]float32)(sums[32:48]))
	s3 := archsimd.LoadFloat32x16((*[16]float32)(sums[48:64]))
	return finishRegs(d, s0, s1, s2, s3, scale, sqn, qn, worst)
}

// addColumnsAVX512 is addColumns 64 lanes at a time: each lane's sum is
// its code times w added with one fused multiply-add, as in
// blockDistancesAVX512.
func addColumnsAVX512(sums []float32, w float32, col []int8) {
	defer archsimd.ClearAVXUpperBits()
	sums = sums[:len(col)]
	wv := archsimd.BroadcastFloat32x16(w)
	for g := 0; g+16 <= len(col); g += 16 {
		s := archsimd.LoadFloat32x16((*[16]float32)(sums[g : g+16]))
		s = archsimd.LoadInt8x16((*[16]int8)(col[g:g+16])).ExtendToInt32().ConvertToFloat32().MulAdd(wv, s)
		s.Store((*[16]float32)(sums[g : g+16]))
	}
}

// dotAVX512 is dotPortable 32 components at a time in two 16-lane fused
// multiply-add registers; the rest in plain Go.
func dotAVX512(a, b []float32) float32 {
	b = b[:len(a)]
	if len(a) < 32 {
		return dotPortable(a, b)
	}
	defer archsimd.ClearAVXUpperBits()
	var s0, s1 archsimd.Float32x16
	i := 0
	for ; i+32 <= len(a); i += 32 {
		s0 = archsimd.LoadFloat32x16((*[16]float32)(a[i:i+16])).MulAdd(archsimd.LoadFloat32x16((*[16]float32)(b[i:i+16])), s0)
		s1 = archsimd.LoadFloat32x16((*[16]float32)(a[i+16:i+32])).MulAdd(archsimd.LoadFloat32x16((*[16]float32)(b[i+16:i+32])), s1)
	}
	var lanes [16]float32
	s0.Add(s1).Store(&lanes)
	var s float32
	for _, x := range lanes {
		s += x
	}
	for ; i < len(a); i++ {
		s += a[i] * b[i]
	}
	return s
}

// dotTilesAVX512 is dotTilesPortable 64 components at a time in four
// 16-lane registers kept across the tiles (each 16 codes widened to
// int32, converted and multiplied in with one fused multiply-add: the
// ByDimension kernels' arithmetic, summed in another order), a tile's
// rest 16 at a time in the first, its last components under 16 in plain
// Go.
func dotTilesAVX512(v []float32, b []int8, lane, lanes int, tiles []int32) float32 {
	defer archsimd.ClearAVXUpperBits()
	var s0, s1, s2, s3 archsimd.Float32x16
	var rest float32
	term := func(code []int8, q []float32, i int, s archsimd.Float32x16) archsimd.Float32x16 {
		c := archsimd.LoadInt8x16((*[16]int8)(code[i : i+16])).ExtendToInt32().ConvertToFloat32()
		return c.MulAdd(archsimd.LoadFloat32x16((*[16]float32)(q[i:i+16])), s)
	}
	for _, t := range tiles {
		lo, w, off := tileSpan(t, lane, lanes, len(v))
		code, q := b[off:off+w], v[lo:lo+w]
		i := 0
		for ; i+64 <= w; i += 64 {
			s0 = term(code, q, i, s0)
			s1 = term(code, q, i+16, s1)
			s2 = term(code, q, i+32, s2)
			s3 = term(code, q, i+48, s3)
		}
		for ; i+16 <= w; i += 16 {
			s0 = term(code, q, i, s0)
		}
		for ; i < w; i++ {
			rest += q[i] * float32(code[i])
		}
	}
	var sums [16]float32
	s0.Add(s1).Add(s2.Add(s3)).Store(&sums)
	s := rest
	for _, x := range sums {
		s += x
	}
	return s
}

// dotTiles2AVX512 is dotTilesAVX512 of two vectors at once (lane1 of b1
// and lane2 of b2), each summed exactly as dotTilesAVX512 sums it, so
// each result is its bit for bit: the two vectors' loads are independent
// and overlap, where a filtered scan otherwise waits for one scattered
// vector's lines at a time.
func dotTiles2AVX512(v []float32, b1 []int8, lane1 int, b2 []int8, lane2 int, lanes int, tiles []int32) (float32, float32) {
	defer archsimd.ClearAVXUpperBits()
	var s0, s1, s2, s3, t0, t1, t2, t3 archsimd.Float32x16
	var rest1, rest2 float32
	for _, t := range tiles {
		lo, w, off1 := tileSpan(t, lane1, lanes, len(v))
		_, _, off2 := tileSpan(t, lane2, lanes, len(v))
		c1, c2, q := b1[off1:off1+w], b2[off2:off2+w], v[lo:lo+w]
		i := 0
		for ; i+64 <= w; i += 64 {
			q0 := archsimd.LoadFloat32x16((*[16]float32)(q[i : i+16]))
			q1 := archsimd.LoadFloat32x16((*[16]float32)(q[i+16 : i+32]))
			q2 := archsimd.LoadFloat32x16((*[16]float32)(q[i+32 : i+48]))
			q3 := archsimd.LoadFloat32x16((*[16]float32)(q[i+48 : i+64]))
			s0 = archsimd.LoadInt8x16((*[16]int8)(c1[i:i+16])).ExtendToInt32().ConvertToFloat32().MulAdd(q0, s0)
			t0 = archsimd.LoadInt8x16((*[16]int8)(c2[i:i+16])).ExtendToInt32().ConvertToFloat32().MulAdd(q0, t0)
			s1 = archsimd.LoadInt8x16((*[16]int8)(c1[i+16:i+32])).ExtendToInt32().ConvertToFloat32().MulAdd(q1, s1)
			t1 = archsimd.LoadInt8x16((*[16]int8)(c2[i+16:i+32])).ExtendToInt32().ConvertToFloat32().MulAdd(q1, t1)
			s2 = archsimd.LoadInt8x16((*[16]int8)(c1[i+32:i+48])).ExtendToInt32().ConvertToFloat32().MulAdd(q2, s2)
			t2 = archsimd.LoadInt8x16((*[16]int8)(c2[i+32:i+48])).ExtendToInt32().ConvertToFloat32().MulAdd(q2, t2)
			s3 = archsimd.LoadInt8x16((*[16]int8)(c1[i+48:i+64])).ExtendToInt32().ConvertToFloat32().MulAdd(q3, s3)
			t3 = archsimd.LoadInt8x16((*[16]int8)(c2[i+48:i+64])).ExtendToInt32().ConvertToFloat32().MulAdd(q3, t3)
		}
		for ; i+16 <= w; i += 16 {
			q0 := archsimd.LoadFloat32x16((*[16]float32)(q[i : i+16]))
			s0 = archsimd.LoadInt8x16((*[16]int8)(c1[i:i+16])).ExtendToInt32().ConvertToFloat32().MulAdd(q0, s0)
			t0 = archsimd.LoadInt8x16((*[16]int8)(c2[i:i+16])).ExtendToInt32().ConvertToFloat32().MulAdd(q0, t0)
		}
		for ; i < w; i++ {
			rest1 += q[i] * float32(c1[i])
			rest2 += q[i] * float32(c2[i])
		}
	}
	var sums1, sums2 [16]float32
	s0.Add(s1).Add(s2.Add(s3)).Store(&sums1)
	t0.Add(t1).Add(t2.Add(t3)).Store(&sums2)
	d1, d2 := rest1, rest2
	for j := range sums1 {
		d1 += sums1[j]
		d2 += sums2[j]
	}
	return d1, d2
}
