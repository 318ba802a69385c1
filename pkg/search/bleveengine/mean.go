package bleveengine

import (
	"context"
	"slices"
	"sync"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// meanSample bounds the vectors MeanContentVector averages: a sample
// spread evenly over the set estimates the mean of a large one closely
// (its standard error shrinks as 1/√n) at a bounded cost.
const meanSample = 16384

// meanCache is a set's last mean and the live vectors it was taken over:
// it is taken again once the set has grown or shrunk by an eighth.
type meanCache struct {
	mu   sync.Mutex
	v    []float32
	live int
}

var _ engine.VectorMean = (*Engine)(nil)

// MeanContentVector implements engine.VectorMean: the mean of the live
// content vectors of length dim, over every document (a statistic of the
// corpus, as the word statistics' document counts are for a caller's
// documents), from at most meanSample of them.
func (e *Engine) MeanContentVector(ctx context.Context, dim int) ([]float32, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return nil, engine.ErrClosed
	}
	set := e.vecs.sets[setKey{dim: dim}]
	if set == nil || set.live == 0 {
		return nil, nil
	}
	c := &set.mean
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.v != nil && 8*abs(set.live-c.live) <= c.live {
		return slices.Clone(c.v), nil
	}
	step := max(1, len(set.owner)/meanSample)
	sum := make([]float64, dim)
	n := 0
	for v := 0; v < len(set.owner); v += step {
		if set.owner[v] < 0 {
			continue
		}
		if n%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		for d, x := range set.full.vector(int32(v)) {
			sum[d] += float64(x)
		}
		n++
	}
	if n == 0 {
		return nil, nil
	}
	m := make([]float32, dim)
	for d := range m {
		m[d] = float32(sum[d] / float64(n))
	}
	c.v, c.live = m, set.live
	return slices.Clone(m), nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
