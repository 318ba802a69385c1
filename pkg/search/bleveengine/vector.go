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

// knn finds the k nearest of the candidate vectors by exact L2 distance.
type knn struct {
	q []float32
	k int
	h knnHeap
}

func newKNN(q []float32, k int) *knn {
	return &knn{q: q, k: k, h: make(knnHeap, 0, k)}
}

// offer considers one candidate. Vectors of another dimension than the
// query are never neighbours.
func (s *knn) offer(slot int32, id int64, v []float32) {
	if len(v) != len(s.q) || len(v) == 0 {
		return
	}
	full := len(s.h) == s.k
	bound := float32(-1)
	if full {
		bound = s.h[0].d2
	}
	d2, ok := l2(s.q, v, bound)
	if !ok {
		return
	}
	s.push(neighbour{slot: slot, id: id, d2: d2})
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
