package bleveengine

import (
	"container/heap"
	"slices"
)

// neighbour is a vector search result: a slot and its squared L2 distance
// to the query.
type neighbour struct {
	slot int32
	id   int64
	d2   float32
}

// worse orders neighbours from the farthest: larger distance, then larger
// id (ties go to the smaller id).
func worse(a, b neighbour) bool {
	if a.d2 != b.d2 {
		return a.d2 > b.d2
	}
	return a.id > b.id
}

// knnHeap keeps the k nearest neighbours seen so far, the farthest on top.
type knnHeap []neighbour

func (h knnHeap) Len() int           { return len(h) }
func (h knnHeap) Less(i, j int) bool { return worse(h[i], h[j]) }
func (h knnHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *knnHeap) Push(x any)        { *h = append(*h, x.(neighbour)) }
func (h *knnHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// vecQuery is a query vector in the form the scan scores it in, computed
// once per search. A sparse query (most of its components zero, as the
// hash embedder makes them for short queries) is kept as its non-zero
// components: then |q-v|² = |q|² + |v|² - 2·q·v costs one multiply per
// non-zero component instead of one per dimension.
type vecQuery struct {
	q      []float32
	sparse []component // nil: dense, scored by l2
	qnorm  float64
}

// component is one non-zero component of a sparse query.
type component struct {
	i int32
	w float64
}

// sparseShare is the largest share of non-zero components for which a
// query is treated as sparse: beyond it, the gathered loads of the sparse
// dot product cost more than the sequential full difference.
const sparseShare = 0.25

func newVecQuery(q []float32) *vecQuery {
	vq := &vecQuery{q: q}
	nz := 0
	for _, x := range q {
		if x != 0 {
			nz++
		}
	}
	if len(q) > 0 && float64(nz) <= sparseShare*float64(len(q)) {
		vq.sparse = make([]component, 0, nz)
		for i, x := range q {
			if x != 0 {
				vq.sparse = append(vq.sparse, component{i: int32(i), w: float64(x)})
			}
		}
		vq.qnorm = sqNorm(q)
	}
	return vq
}

// knn finds the k nearest of the candidate vectors by exact L2 distance.
type knn struct {
	*vecQuery
	k int
	h knnHeap
}

func newKNN(vq *vecQuery, k int) *knn {
	return &knn{vecQuery: vq, k: k, h: make(knnHeap, 0, k)}
}

// offer considers one candidate whose squared norm is norm. Vectors of
// another dimension than the query are never neighbours.
func (s *knn) offer(slot int32, id int64, v []float32, norm float64) {
	if len(v) != len(s.q) || len(v) == 0 {
		return
	}
	full := len(s.h) == s.k
	bound := float32(-1)
	if full {
		bound = s.h[0].d2
	}
	var d2 float32
	if s.sparse != nil {
		d2 = sparseL2(s.sparse, s.qnorm, v, norm)
		if full && d2 > bound {
			return
		}
	} else {
		var ok bool
		if d2, ok = l2(s.q, v, bound); !ok {
			return
		}
	}
	s.push(neighbour{slot: slot, id: id, d2: d2})
}

// offerPassages considers a candidate by its nearest passage: vs holds
// its passage vectors back to back, dim values each, with squared norms
// norms. A passage is abandoned as soon as it is farther than the
// nearest passage so far or the current k-th nearest document, so a
// document costs about one full distance per passage that improves on
// both.
func (s *knn) offerPassages(slot int32, id int64, vs []float32, dim int, norms []float64) {
	if len(norms) == 1 {
		s.offer(slot, id, vs, norms[0])
		return
	}
	if dim != len(s.q) || dim == 0 {
		return
	}
	full := len(s.h) == s.k
	bound := float32(-1)
	if full {
		bound = s.h[0].d2
	}
	best := float32(-1)
	for p, norm := range norms {
		v := vs[p*dim : (p+1)*dim]
		var d2 float32
		if s.sparse != nil {
			d2 = sparseL2(s.sparse, s.qnorm, v, norm)
		} else {
			limit := bound
			if best >= 0 && (limit < 0 || best < limit) {
				limit = best
			}
			var ok bool
			if d2, ok = l2(s.q, v, limit); !ok {
				continue
			}
		}
		if best < 0 || d2 < best {
			best = d2
		}
	}
	if best < 0 || full && best > bound {
		return
	}
	s.push(neighbour{slot: slot, id: id, d2: best})
}

// sparseL2 returns the squared L2 distance of the sparse query q (squared
// norm qnorm) and v (squared norm vnorm), computed in float64 so that the
// cancellation of |q|² + |v|² - 2·q·v for near vectors stays below
// float32's resolution of the result.
func sparseL2(q []component, qnorm float64, v []float32, vnorm float64) float32 {
	var dot float64
	for _, c := range q {
		dot += c.w * float64(v[c.i])
	}
	d2 := qnorm + vnorm - 2*dot
	if d2 < 0 {
		d2 = 0
	}
	return float32(d2)
}

// sqNorm returns the squared L2 norm of v in float64.
func sqNorm(v []float32) float64 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	return n
}

// push adds a neighbour whose distance is known, keeping the k nearest.
func (s *knn) push(n neighbour) {
	if len(s.h) < s.k {
		heap.Push(&s.h, n)
		return
	}
	if worse(s.h[0], n) {
		s.h[0] = n
		heap.Fix(&s.h, 0)
	}
}

// result returns the neighbours, nearest first (ties by id ascending).
func (s *knn) result() []neighbour {
	out := slices.Clone(s.h)
	slices.SortFunc(out, func(a, b neighbour) int {
		switch {
		case worse(b, a):
			return -1
		case worse(a, b):
			return 1
		}
		return 0
	})
	return out
}

// l2 returns the squared L2 distance of a and b (same length). With bound
// ≥ 0 it gives up, returning false, as soon as the partial sum exceeds
// bound: such a vector cannot enter the k nearest. The sum is always
// accumulated in the same order, so abandoning never changes a result.
func l2(a, b []float32, bound float32) (float32, bool) {
	b = b[:len(a)]
	var sum float32
	for len(a) >= 64 {
		x, y := a[:64], b[:64]
		var s0, s1, s2, s3 float32
		for len(x) >= 4 && len(y) >= 4 {
			d0 := x[0] - y[0]
			d1 := x[1] - y[1]
			d2 := x[2] - y[2]
			d3 := x[3] - y[3]
			s0 += d0 * d0
			s1 += d1 * d1
			s2 += d2 * d2
			s3 += d3 * d3
			x, y = x[4:], y[4:]
		}
		sum += (s0 + s1) + (s2 + s3)
		a, b = a[64:], b[64:]
		if bound >= 0 && sum > bound {
			return sum, false
		}
	}
	for i := range a {
		d := a[i] - b[i]
		sum += d * d
	}
	if bound >= 0 && sum > bound {
		return sum, false
	}
	return sum, true
}
