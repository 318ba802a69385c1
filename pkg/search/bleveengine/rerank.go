package bleveengine

import (
	"cmp"
	"slices"
)

// rerankContent applies the request's second stage (engine.Rerank) to a
// vector-only search's nearest documents, nearest first: the first Depth
// move to the distance of their cosine plus Weight·Score(content), i.e.
// d² + 2·Weight·(1 − Score), the others to d² + 4·Weight, which keeps
// them behind (Score ≥ −1); then nearest first again.
func (run *searchRun) rerankContent(nearest []neighbour) error {
	rr := run.req.Rerank
	if rr == nil || rr.Score == nil || rr.Depth <= 0 || rr.Weight <= 0 || len(run.plan.FullText) > 0 {
		return nil
	}
	for i := range nearest {
		if i >= rr.Depth {
			nearest[i].d2 += float32(4 * rr.Weight)
			continue
		}
		if err := run.checkCtx(); err != nil {
			return err
		}
		content, err := run.content(nearest[i].id)
		if err != nil {
			return err
		}
		f := min(max(rr.Score(content), -1), 1)
		nearest[i].d2 += float32(2 * rr.Weight * (1 - f))
	}
	slices.SortStableFunc(nearest, func(a, b neighbour) int { return cmp.Or(cmp.Compare(a.d2, b.d2), cmp.Compare(a.id, b.id)) })
	return nil
}
