package embed

import (
	"context"
	"fmt"
	"math"
)

// The use embedder's query shift against hubs: a passage near the mean of
// the stored vectors (in the dense region of a corpus of scientific
// abstracts, say) is near many queries whatever they mean. Scoring
// q·p − β·Σ ‖q_part‖·(p_part·μ_part)/‖p_part‖, μ the mean stored vector,
// takes each passage's similarity to the corpus as a whole off its score
// (the corpus mean as every passage's neighbour: hubness reduction in the
// manner of CSLS, without per-passage statistics), over the meaning's
// parts (the sentence encoder's and GloVe's; the lexical part, whose
// query words already weigh their rarity, measured worse shifted too).
// Documents store their parts at fixed lengths (√w, √g), so the
// correction is a shift of the query alone: q_part −
// β·‖q_part‖/‖p_part‖·μ_part. No stored vector changes; the engine gives μ (engine.VectorMean) over the
// documents the caller can see, as it gives the word statistics, so no
// score depends on documents the caller cannot see.

// DefaultUSEQueryMeanShift is β: chosen on the paraphrase set and the
// odd-numbered SciFact claims (TestUSEHubnessTune; docs/benchmarks.md).
const DefaultUSEQueryMeanShift = 0.35

// MeanVector returns the mean of the content vectors stored for the
// documents searched (nil, nil: unknown).
type MeanVector func(ctx context.Context) ([]float32, error)

// checkMeanShift validates β.
func checkMeanShift(b float64) error {
	if math.IsNaN(b) || b < 0 || b > 2 {
		return fmt.Errorf("%w: use query mean shift %v outside [0, 2]", ErrConfig, b)
	}
	return nil
}

// EmbedQueriesWithCorpus is EmbedQueriesWithStats with each query then
// shifted away from the corpus's mean stored vector by the query mean
// shift (USEConfig.QueryMeanShift). A mean that fails, is unknown or has
// another length leaves the queries as EmbedQueriesWithStats makes them.
func (u *USE) EmbedQueriesWithCorpus(ctx context.Context, queries []string, stats WordStats, mean MeanVector) ([][]float32, error) {
	vecs, err := u.EmbedQueriesWithStats(ctx, queries, stats)
	if err != nil || mean == nil || u.meanShift == 0 {
		return vecs, err
	}
	m, err := mean(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return vecs, nil
	}
	if len(m) != u.id.Dimensions {
		return vecs, nil
	}
	for _, v := range vecs {
		u.shiftFromMean(v, m)
	}
	return vecs, nil
}

// shiftFromMean moves query vector v away from the mean stored vector m,
// over the meaning's parts (see the top of this file); a zero part stays
// zero.
func (u *USE) shiftFromMean(v, m []float32) {
	w, g := u.w, 0.0
	if u.glove != nil {
		g = u.g
	}
	parts := []struct {
		lo, hi int
		share  float64 // the part's squared length in a document
	}{{0, USEDimensions, w}, {u.gloveOff, u.lexOff, g}}
	for _, p := range parts {
		if p.share <= 0 || p.hi <= p.lo {
			continue
		}
		var n float64
		for _, x := range v[p.lo:p.hi] {
			n += float64(x) * float64(x)
		}
		if n == 0 {
			continue
		}
		f := float32(u.meanShift * math.Sqrt(n) / math.Sqrt(p.share))
		for d := p.lo; d < p.hi; d++ {
			v[d] -= f * m[d]
		}
	}
}
