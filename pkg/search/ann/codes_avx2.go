//go:build goexperiment.simd && amd64

package ann

import "simd/archsimd"

// Built with GOEXPERIMENT=simd on a CPU with AVX2 and FMA but not
// AVX-512 (most AMD Zen 2 and 3, many Intel cloud VMs), the codes are
// scanned 8 lanes at a time: the portable kernels convert one code at a
// time (dotTilesPortable through a table), so such a CPU otherwise scans
// with scalar arithmetic what an AVX-512 CPU scans 16 lanes at a time.
// The AVX-512 kernels (codes_simd.go) take precedence where the CPU has
// them; both are pure Go (simd/archsimd).
//
// Graph walks then compute their distances from the codes too
// (walkOnCodes): with these kernels a walk on the codes cost a third to
// a half of the CPU of a walk on the memory-mapped floats with dotAVX2
// (BenchmarkWalkOnCodes, 100 k vectors of 1,380 dimensions, Ef 400, with
// GODEBUG=cpu.avx512f=off; avx2-codes-2026-11-28.md), for the same
// results after re-ranking, and a visit reads a quarter of the bytes.
func init() {
	if !archsimd.X86.AVX512() && archsimd.X86.AVX2() && archsimd.X86.FMA() {
		kern = avx2Kernels
		kernelName = "avx2"
		dotTilesKernel = dotTilesAVX2
		dotTiles2Kernel = dotTiles2AVX2
		walkOnCodes = true
	}
}

// avx2Kernels are the ByDimension kernels 8 lanes at a time.
var avx2Kernels = kernelSet{"avx2", blockDistancesAVX2, addColumnsAVX2, finishDistancesAVX2}

// codes16 returns the 16 codes at code[i:] as two 8-lane float vectors.
// AVX2 widens int8 to int32 only 8 at a time (VPMOVSXBD into 256 bits),
// and archsimd loads 16 bytes at least, so the high 8 are moved down
// with one unpack (VPUNPCKHQDQ) rather than loaded again: a second load
// at i+8 would read past the end of a tile's last 16.
func codes16(code []int8, i int) (lo, hi archsimd.Float32x8) {
	x := archsimd.LoadInt8x16((*[16]int8)(code[i : i+16]))
	h := x.AsInt64x2().InterleaveHi(x.AsInt64x2()).AsInt8x16()
	return x.ExtendLo8ToInt32().ConvertToFloat32(), h.ExtendLo8ToInt32().ConvertToFloat32()
}

// dotTilesAVX2 is dotTilesPortable 32 components at a time in four
// 8-lane registers kept across the tiles (each code widened to int32,
// converted and multiplied in with one fused multiply-add, as
// dotTilesAVX512 does 16 lanes wide), a tile's rest 16 then 8 at a time
// in the first two, its last components under 8 in plain Go.
func dotTilesAVX2(v []float32, b []int8, lane, lanes int, tiles []int32) float32 {
	defer archsimd.ClearAVXUpperBits()
	var s0, s1, s2, s3 archsimd.Float32x8
	var rest float32
	for _, t := range tiles {
		lo, w, off := tileSpan(t, lane, lanes, len(v))
		code, q := b[off:off+w], v[lo:lo+w]
		i := 0
		for ; i+32 <= w; i += 32 {
			c0, c1 := codes16(code, i)
			c2, c3 := codes16(code, i+16)
			s0 = c0.MulAdd(archsimd.LoadFloat32x8((*[8]float32)(q[i:i+8])), s0)
			s1 = c1.MulAdd(archsimd.LoadFloat32x8((*[8]float32)(q[i+8:i+16])), s1)
			s2 = c2.MulAdd(archsimd.LoadFloat32x8((*[8]float32)(q[i+16:i+24])), s2)
			s3 = c3.MulAdd(archsimd.LoadFloat32x8((*[8]float32)(q[i+24:i+32])), s3)
		}
		if i+16 <= w {
			c0, c1 := codes16(code, i)
			s0 = c0.MulAdd(archsimd.LoadFloat32x8((*[8]float32)(q[i:i+8])), s0)
			s1 = c1.MulAdd(archsimd.LoadFloat32x8((*[8]float32)(q[i+8:i+16])), s1)
			i += 16
		}
		if i+8 <= w && i >= 8 {
			// The high half of the 16 codes ending at i+8.
			_, c := codes16(code, i-8)
			s0 = c.MulAdd(archsimd.LoadFloat32x8((*[8]float32)(q[i:i+8])), s0)
			i += 8
		}
		for ; i < w; i++ {
			rest += q[i] * float32(code[i])
		}
	}
	var sums [8]float32
	s0.Add(s1).Add(s2.Add(s3)).Store(&sums)
	s := rest
	for _, x := range sums {
		s += x
	}
	return s
}

// dotTiles2AVX2 is dotTilesAVX2 of two vectors at once (lane1 of b1 and
// lane2 of b2), each summed exactly as dotTilesAVX2 sums it, so each
// result is its bit for bit: the two vectors' loads are independent and
// overlap (dotTiles2Kernel).
func dotTiles2AVX2(v []float32, b1 []int8, lane1 int, b2 []int8, lane2 int, lanes int, tiles []int32) (float32, float32) {
	defer archsimd.ClearAVXUpperBits()
	var s0, s1, s2, s3, t0, t1, t2, t3 archsimd.Float32x8
	var rest1, rest2 float32
	for _, t := range tiles {
		lo, w, off1 := tileSpan(t, lane1, lanes, len(v))
		_, _, off2 := tileSpan(t, lane2, lanes, len(v))
		c1, c2, q := b1[off1:off1+w], b2[off2:off2+w], v[lo:lo+w]
		i := 0
		for ; i+32 <= w; i += 32 {
			q0 := archsimd.LoadFloat32x8((*[8]float32)(q[i : i+8]))
			q1 := archsimd.LoadFloat32x8((*[8]float32)(q[i+8 : i+16]))
			a0, a1 := codes16(c1, i)
			b0, b1 := codes16(c2, i)
			s0, t0 = a0.MulAdd(q0, s0), b0.MulAdd(q0, t0)
			s1, t1 = a1.MulAdd(q1, s1), b1.MulAdd(q1, t1)
			q2 := archsimd.LoadFloat32x8((*[8]float32)(q[i+16 : i+24]))
			q3 := archsimd.LoadFloat32x8((*[8]float32)(q[i+24 : i+32]))
			a2, a3 := codes16(c1, i+16)
			b2, b3 := codes16(c2, i+16)
			s2, t2 = a2.MulAdd(q2, s2), b2.MulAdd(q2, t2)
			s3, t3 = a3.MulAdd(q3, s3), b3.MulAdd(q3, t3)
		}
		if i+16 <= w {
			q0 := archsimd.LoadFloat32x8((*[8]float32)(q[i : i+8]))
			q1 := archsimd.LoadFloat32x8((*[8]float32)(q[i+8 : i+16]))
			a0, a1 := codes16(c1, i)
			b0, b1 := codes16(c2, i)
			s0, t0 = a0.MulAdd(q0, s0), b0.MulAdd(q0, t0)
			s1, t1 = a1.MulAdd(q1, s1), b1.MulAdd(q1, t1)
			i += 16
		}
		if i+8 <= w && i >= 8 {
			q0 := archsimd.LoadFloat32x8((*[8]float32)(q[i : i+8]))
			_, a := codes16(c1, i-8)
			_, b := codes16(c2, i-8)
			s0, t0 = a.MulAdd(q0, s0), b.MulAdd(q0, t0)
			i += 8
		}
		for ; i < w; i++ {
			rest1 += q[i] * float32(c1[i])
			rest2 += q[i] * float32(c2[i])
		}
	}
	var sums1, sums2 [8]float32
	s0.Add(s1).Add(s2.Add(s3)).Store(&sums1)
	t0.Add(t1).Add(t2.Add(t3)).Store(&sums2)
	d1, d2 := rest1, rest2
	for j := range sums1 {
		d1 += sums1[j]
		d2 += sums2[j]
	}
	return d1, d2
}

// blockDistancesAVX2 is blockDistances for a full group: the 64 lanes'
// sums stay in eight 8-lane registers across the query's components
// (each column's codes widened to int32, converted, and multiplied in
// with one fused multiply-add, as blockDistancesAVX512 does in four
// 16-lane ones), then the distances and the mask of lanes nearer than
// worst are computed in the same registers.
func blockDistancesAVX2(d *[blockSize]float32, b []int8, stride int, idx []int32, val []float32, scale, sqn []float32, qn, worst float32) uint64 {
	defer archsimd.ClearAVXUpperBits()
	// Eight variables, not an array: an array of vectors would live in
	// memory, each multiply-add a load and a store.
	var s0, s1, s2, s3, s4, s5, s6, s7 archsimd.Float32x8
	for j, i := range idx {
		col := b[int(i)*stride : int(i)*stride+blockSize]
		w := archsimd.BroadcastFloat32x8(val[j])
		c0, c1 := codes16(col, 0)
		s0, s1 = c0.MulAdd(w, s0), c1.MulAdd(w, s1)
		c2, c3 := codes16(col, 16)
		s2, s3 = c2.MulAdd(w, s2), c3.MulAdd(w, s3)
		c4, c5 := codes16(col, 32)
		s4, s5 = c4.MulAdd(w, s4), c5.MulAdd(w, s5)
		c6, c7 := codes16(col, 48)
		s6, s7 = c6.MulAdd(w, s6), c7.MulAdd(w, s7)
	}
	return finishRegs8(d, s0, s1, s2, s3, s4, s5, s6, s7, scale, sqn, qn, worst)
}

// finishRegs8 computes a full group's distances and mask from its sums
// in eight registers, each lane as finishRegs computes it.
func finishRegs8(d *[blockSize]float32, s0, s1, s2, s3, s4, s5, s6, s7 archsimd.Float32x8, scale, sqn []float32, qn, worst float32) uint64 {
	scale, sqn = scale[:blockSize], sqn[:blockSize]
	q := archsimd.BroadcastFloat32x8(qn)
	m2 := archsimd.BroadcastFloat32x8(-2)
	zero := archsimd.Float32x8{}
	wv := archsimd.BroadcastFloat32x8(worst)
	dist := func(s archsimd.Float32x8, off int) uint64 {
		sc := archsimd.LoadFloat32x8((*[8]float32)(scale[off : off+8]))
		sq := archsimd.LoadFloat32x8((*[8]float32)(sqn[off : off+8]))
		// max(0, (qn + sqn) − 2·(scale·s))
		x := sc.Mul(s).MulAdd(m2, q.Add(sq)).Max(zero)
		x.Store((*[8]float32)(d[off : off+8]))
		return uint64(x.Less(wv).ToBits()) << off
	}
	return dist(s0, 0) | dist(s1, 8) | dist(s2, 16) | dist(s3, 24) |
		dist(s4, 32) | dist(s5, 40) | dist(s6, 48) | dist(s7, 56)
}

// finishDistancesAVX2 is finishDistances for a full group, the sums
// loaded into the registers blockDistancesAVX2 keeps them in.
func finishDistancesAVX2(d *[blockSize]float32, sums *[blockSize]float32, scale, sqn []float32, qn, worst float32) uint64 {
	defer archsimd.ClearAVXUpperBits()
	ld := func(off int) archsimd.Float32x8 { return archsimd.LoadFloat32x8((*[8]float32)(sums[off : off+8])) }
	return finishRegs8(d, ld(0), ld(8), ld(16), ld(24), ld(32), ld(40), ld(48), ld(56), scale, sqn, qn, worst)
}

// addColumnsAVX2 is addColumns 16 lanes at a time: each lane's sum is
// its code times w added with one fused multiply-add, as in
// blockDistancesAVX2.
func addColumnsAVX2(sums []float32, w float32, col []int8) {
	defer archsimd.ClearAVXUpperBits()
	sums = sums[:len(col)]
	wv := archsimd.BroadcastFloat32x8(w)
	for g := 0; g+16 <= len(col); g += 16 {
		c0, c1 := codes16(col, g)
		s0 := archsimd.LoadFloat32x8((*[8]float32)(sums[g : g+8]))
		s1 := archsimd.LoadFloat32x8((*[8]float32)(sums[g+8 : g+16]))
		c0.MulAdd(wv, s0).Store((*[8]float32)(sums[g : g+8]))
		c1.MulAdd(wv, s1).Store((*[8]float32)(sums[g+8 : g+16]))
	}
}
