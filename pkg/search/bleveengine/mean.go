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
// content vectors of length dim of the documents req's caller can see
// (the same view BM25's statistics and DocFreqs count over, so no
// query's shift depends on documents the caller cannot see), from at
// most meanSample of them spread evenly. A caller who sees every live
// document shares the whole set's mean; another visibility's mean is
// kept with its statistics view (statsCache) and taken again, like the
// whole set's, once the documents it covers have changed by an eighth.
func (e *Engine) MeanContentVector(ctx context.Context, req engine.Request, dim int) ([]float32, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return nil, engine.ErrClosed
	}
	set := e.vecs.sets[setKey{dim: dim}]
	if set == nil || set.live == 0 {
		return nil, nil
	}
	c, live, visible := &set.mean, set.live, bitset(nil)
	if !req.Unrestricted {
		run := &searchRun{e: e, ctx: ctx, tab: e.tab, req: &req}
		v, err := run.stats()
		if err != nil {
			return nil, err
		}
		if v.visible != nil {
			c, live, visible = v.meanCache(dim), v.live, v.visible
			if live == 0 {
				return nil, nil
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.v != nil && 8*abs(live-c.live) <= c.live {
		return slices.Clone(c.v), nil
	}
	// The vectors to average: every live one, or the visible documents'
	// (about their share of the live documents).
	want := set.live
	if visible != nil && e.tab.live > 0 {
		want = int(int64(set.live) * int64(live) / int64(e.tab.live))
	}
	step := max(1, want/meanSample)
	sum := make([]float64, dim)
	n, seen := 0, 0
	for v, slot := range set.owner {
		if slot < 0 || (visible != nil && !visible.has(int(slot))) {
			continue
		}
		seen++
		if (seen-1)%step != 0 {
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
	c.v, c.live = m, live
	return slices.Clone(m), nil
}

// meanCache returns the view's cache of the mean of its visible
// documents' content vectors of length dim.
func (s *viewStats) meanCache(dim int) *meanCache {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.means == nil {
		s.means = map[int]*meanCache{}
	}
	c := s.means[dim]
	if c == nil {
		c = &meanCache{}
		s.means[dim] = c
	}
	return c
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
