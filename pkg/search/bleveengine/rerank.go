package bleveengine

import (
	"cmp"
	"slices"
)

// rerankContent applies the request's second stage (engine.Rerank, its
// arithmetic shared with OpenSearch: Rerank.Distance) to a vector-only
// search's nearest documents, nearest first; then nearest first again.
func (run *searchRun) rerankContent(nearest []neighbour) error {
	rr := run.req.Rerank
	if !rr.Active() || len(run.plan.FullText) > 0 {
		return nil
	}
	for i := range nearest {
		d2, err := rr.Distance(i, nearest[i].d2, func() (string, error) {
			if err := run.checkCtx(); err != nil {
				return "", err
			}
			return run.content(nearest[i].id)
		})
		if err != nil {
			return err
		}
		nearest[i].d2 = d2
	}
	slices.SortStableFunc(nearest, func(a, b neighbour) int { return cmp.Or(cmp.Compare(a.d2, b.d2), cmp.Compare(a.id, b.id)) })
	return nil
}
