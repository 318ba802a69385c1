package ann

import "math"

// Vectors are kept in memory as int8 codes with one scale per vector:
// v ≈ scale·code, scale = max|vᵢ|/127. A 768-dimension vector costs 768
// bytes instead of 3,072. Distances to a float32 query are computed from
// the codes as |q|² + |v̂|² − 2·scale·(q·code), where |v̂|² is the squared
// norm of the dequantised vector, kept beside the scale; distances between
// two stored vectors (graph construction) as an integer dot product.

// quantize returns the int8 codes of v (appended to dst), its scale and
// the squared norm of the dequantised vector.
func quantize(dst []int8, v []float32) ([]int8, float32, float32) {
	var maxAbs float32
	for _, x := range v {
		if x < 0 {
			x = -x
		}
		if x > maxAbs {
			maxAbs = x
		}
	}
	if maxAbs == 0 || math.IsNaN(float64(maxAbs)) || math.IsInf(float64(maxAbs), 0) {
		for range v {
			dst = append(dst, 0)
		}
		return dst, 0, 0
	}
	scale := maxAbs / 127
	inv := 1 / scale
	var sq int64
	start := len(dst)
	dst = append(dst, make([]int8, len(v))...)
	out := dst[start:]
	for i, x := range v {
		// Round half away from zero; |x·inv| ≤ 127 by the choice of scale.
		y := x * inv
		var c int32
		if y >= 0 {
			c = int32(y + 0.5)
		} else {
			c = int32(y - 0.5)
		}
		c = max(-127, min(127, c))
		out[i] = int8(c)
		sq += int64(c * c)
	}
	return dst, scale, scale * scale * float32(sq)
}

// Query is a query vector prepared for distances to codes: dense, or its
// non-zero components when at most a quarter of them are non-zero (a
// short text's hash vector), which makes each distance cost one multiply
// per non-zero component.
type Query struct {
	v      []float32
	idx    []int32 // non-zero components (sparse queries)
	val    []float32
	sparse bool
	norm   float32 // |q|²
	// tiles are the ByVector tiles (tileSize components) where a dense
	// query has a non-zero component, the only ones a vector's dot
	// product reads: a short query of the use embedder has no lexical
	// part, 612 of the blend's 1,380 components.
	tiles []int32
	// lo and hi bound a dense query's non-zero components: its dot
	// product with a full-precision vector (a graph walk's distances)
	// reads that span only, the first 612 of a short use query's 1,380.
	lo, hi int
}

// sparseShare is the largest share of non-zero components for which a
// query is scored sparsely.
const sparseShare = 0.25

// NewQuery prepares q.
func NewQuery(q []float32) *Query {
	p := &Query{v: q}
	nz := 0
	var n float64
	for _, x := range q {
		if x != 0 {
			nz++
		}
		n += float64(x) * float64(x)
	}
	p.norm = float32(n)
	if len(q) > 0 && float64(nz) <= sparseShare*float64(len(q)) {
		p.sparse = true
		for i, x := range q {
			if x != 0 {
				p.idx = append(p.idx, int32(i))
				p.val = append(p.val, x)
			}
		}
		return p
	}
	p.lo, p.hi = len(q), len(q)
	for i, x := range q {
		if x != 0 {
			p.lo = i
			break
		}
	}
	for i := len(q) - 1; i >= p.lo; i-- {
		if q[i] != 0 {
			p.hi = i + 1
			break
		}
	}
	for t := 0; t*tileSize < len(q); t++ {
		for _, x := range q[t*tileSize : min(len(q), (t+1)*tileSize)] {
			if x != 0 {
				p.tiles = append(p.tiles, int32(t))
				break
			}
		}
	}
	return p
}

// nzIdx returns the non-zero components of q (those of a dense query are
// computed on each call).
func (q *Query) nzIdx() ([]int32, []float32) {
	if q.sparse {
		return q.idx, q.val
	}
	var idx []int32
	var val []float32
	for i, x := range q.v {
		if x != 0 {
			idx = append(idx, int32(i))
			val = append(val, x)
		}
	}
	return idx, val
}

// Sparse reports whether q is scored by its non-zero components.
func (q *Query) Sparse() bool { return q.sparse }

// dotF returns q·v for a full-precision v, reading v only where q is
// not zero: at q's non-zero components (sparse) or in the span holding
// them (dense). A graph walk's visit reads a vector this way: for a short
// use query (the blend's first 612 of 1,380 components) 2.4 of its 5.5 KB.
func (q *Query) dotF(v []float32) float32 {
	if q.sparse {
		var s float32
		for j, i := range q.idx {
			s += q.val[j] * v[i]
		}
		return s
	}
	if q.lo >= q.hi {
		return 0
	}
	return dotF(q.v[q.lo:q.hi], v[q.lo:q.hi])
}

// dotF returns a·b of two vectors of one length.
func dotF(a, b []float32) float32 { return dotKernel(a, b) }

// dotKernel is dotF's implementation: dotPortable, or with GOEXPERIMENT=simd
// on an AVX-512 CPU a 16-lane kernel (the graph writer's distances are
// dense dot products: most of an Add's CPU), on an AVX2 one an 8-lane
// kernel (dotName names it; the AVX-512 one is named by kernelName).
var dotKernel = dotPortable

var dotName = "go"

// dotPortable is a·b in plain Go, four sums at a time.
func dotPortable(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func sqNorm(v []float32) float32 { return dotF(v, v) }

// dot returns q·code.
func (q *Query) dot(code []int8) float32 {
	if q.sparse {
		var s float32
		for j, i := range q.idx {
			s += q.val[j] * float32(code[i])
		}
		return s
	}
	v := q.v
	code = code[:len(v)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(v); i += 4 {
		s0 += v[i] * float32(code[i])
		s1 += v[i+1] * float32(code[i+1])
		s2 += v[i+2] * float32(code[i+2])
		s3 += v[i+3] * float32(code[i+3])
	}
	for ; i < len(v); i++ {
		s0 += v[i] * float32(code[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// dotCodes returns a·b of two code vectors of one length.
func dotCodes(a, b []int8) int32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 int32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += int32(a[i]) * int32(b[i])
		s1 += int32(a[i+1]) * int32(b[i+1])
		s2 += int32(a[i+2]) * int32(b[i+2])
		s3 += int32(a[i+3]) * int32(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += int32(a[i]) * int32(b[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// L2 returns the exact squared L2 distance of two float32 vectors of one
// length, accumulated in float64 (the re-ranking distance).
func L2(a, b []float32) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		d0 := float64(a[i] - b[i])
		d1 := float64(a[i+1] - b[i+1])
		d2 := float64(a[i+2] - b[i+2])
		d3 := float64(a[i+3] - b[i+3])
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < len(a); i++ {
		d := float64(a[i] - b[i])
		s0 += d * d
	}
	return (s0 + s1) + (s2 + s3)
}
