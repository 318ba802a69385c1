package opensearchengine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

var _ engine.VectorMean = (*Engine)(nil)

// meanSample bounds the documents per shard whose passages
// MeanContentVector averages (the embedded engine samples at most as many
// vectors): a sample estimates the mean of a large set closely at a
// bounded cost.
const meanSample = 16384

// meanSeed seeds the random order the sample is drawn in (random_score
// over _seq_no): the same documents give the same sample, so the same
// query the same vector.
const meanSeed = 20

// Names of the aggregations of meanBody.
const (
	meanAggSample   = "sample"
	meanAggPassages = "passages"
	meanAggSum      = "sum"
)

// The scripted_metric of meanBody, in Painless: each shard sums the
// passage vectors of its sampled documents (doc values of the knn_vector
// field, a float[] per nested passage; the k-NN plugin allows them in
// scripted metric contexts) in doubles, and the reduce adds the shards'
// sums. A vector of another length is left out, as the embedded engine
// keeps one set per length.
const (
	meanInit    = "state.sum = new double[params.dim]; state.n = 0L;"
	meanMap     = "def dv = doc[params.field]; if (dv.size() == 0) { return; } float[] v = (float[]) dv.getValue(); if (v.length != params.dim) { return; } double[] s = state.sum; for (int i = 0; i < v.length; i++) { s[i] += v[i]; } state.n++;"
	meanCombine = "double[] s = state.sum; List sum = new ArrayList(); for (int i = 0; i < s.length; i++) { sum.add(s[i]); } return ['sum': sum, 'n': state.n];"
	meanReduce  = "double[] sum = new double[params.dim]; long n = 0L; for (def s : states) { if (s == null) { continue; } for (int i = 0; i < params.dim; i++) { sum[i] += ((Number) s.sum[i]).doubleValue(); } n += ((Number) s.n).longValue(); } List out = new ArrayList(); for (int i = 0; i < sum.length; i++) { out.add(sum[i]); } return ['sum': out, 'n': n];"
)

// passagesExist matches the documents holding at least one content
// passage (those with content vectors).
func passagesExist() obj {
	return obj{"nested": obj{"path": fieldPassages, "query": obj{"match_all": obj{}}}}
}

// meanFilter is the query of both of MeanContentVector's searches: the
// caller's visibility filter (as every search's) and passagesExist.
func meanFilter(req engine.Request) obj {
	filter := []any{}
	if vis := visibilityFilter(req); vis != nil {
		filter = append(filter, vis)
	}
	filter = append(filter, passagesExist())
	return obj{"bool": obj{"filter": filter}}
}

// meanCountBody counts the documents meanFilter matches (size 0, so the
// shard request cache keeps it until the next refresh).
func meanCountBody(req engine.Request, timeout time.Duration) obj {
	body := obj{"query": meanFilter(req), "size": 0, "track_total_hits": true}
	setTimeout(body, timeout)
	return body
}

// meanBody is the search MeanContentVector sends to take the mean: the
// documents of meanFilter in a random order of fixed seed, a sampler
// keeping at most meanSample of them per shard, their passages (nested),
// and the scripted_metric summing the passages' vectors of length dim.
// hits.total counts the documents matched (sampled or not). It is pure.
func meanBody(req engine.Request, dim int, timeout time.Duration) obj {
	body := obj{
		"query": obj{"function_score": obj{
			"query":        meanFilter(req),
			"random_score": obj{"seed": meanSeed, "field": "_seq_no"},
			"boost_mode":   "replace",
		}},
		"size":             0,
		"track_total_hits": true,
		"aggs": obj{meanAggSample: obj{
			"sampler": obj{"shard_size": meanSample},
			"aggs": obj{meanAggPassages: obj{
				"nested": obj{"path": fieldPassages},
				"aggs": obj{meanAggSum: obj{"scripted_metric": obj{
					"params":         obj{"field": fieldPassages + "." + fieldPassageVector, "dim": dim},
					"init_script":    meanInit,
					"map_script":     meanMap,
					"combine_script": meanCombine,
					"reduce_script":  meanReduce,
				}}},
			}},
		}},
	}
	setTimeout(body, timeout)
	return body
}

// meanOf reads meanBody's aggregation: the mean vector of length dim
// (nil when no passage was summed).
func (r *searchResponse) meanOf(dim int) ([]float32, error) {
	raw, ok := r.Aggregations[meanAggSample]
	if !ok {
		return nil, fmt.Errorf("opensearchengine: mean vector: the response has no %s aggregation", meanAggSample)
	}
	var agg struct {
		Passages struct {
			Sum struct {
				Value *struct {
					Sum []float64 `json:"sum"`
					N   int64     `json:"n"`
				} `json:"value"`
			} `json:"sum"`
		} `json:"passages"`
	}
	if err := json.Unmarshal(raw, &agg); err != nil {
		return nil, fmt.Errorf("opensearchengine: mean vector: decoding the %s aggregation: %w", meanAggSample, err)
	}
	v := agg.Passages.Sum.Value
	if v == nil || v.N == 0 {
		return nil, nil
	}
	if len(v.Sum) != dim {
		return nil, fmt.Errorf("opensearchengine: mean vector: a sum of %d dimensions, want %d", len(v.Sum), dim)
	}
	m := make([]float32, dim)
	for d, x := range v.Sum {
		m[d] = float32(x / float64(v.N))
	}
	return m, nil
}

// meanCache is the last mean taken for one visibility and vector length,
// and how many documents with passages it covered: it is taken again once
// they have grown or shrunk by an eighth (as the embedded engine's).
// counted is when they were last counted.
type meanCache struct {
	mu      sync.Mutex
	v       []float32
	docs    int64
	ok      bool
	counted time.Time
}

// meanRecount is how long a mean is served without counting the
// documents it covers again: a count is a round trip, and every vector
// search of the use embedder asks for the mean, so counting on each one
// would add a request to every search and queue concurrent searches of
// one visibility behind each other's counts. A change of an eighth of
// the documents within a few seconds shifts the mean by little; it is
// taken again at the next count.
const meanRecount = 5 * time.Second

// maxMeanCaches bounds the visibilities whose means are kept; past it
// they are all forgotten (taken again when asked).
const maxMeanCaches = 1024

// meanKey is the cache key of the index's embedder (emb: its identity,
// "" when none is recorded; a rebuild by another process may record a new
// one behind the alias), dim and req's visibility: "*" for an
// unrestricted caller, else the caller's distinct groups in order.
func meanKey(emb string, req engine.Request, dim int) string {
	var b strings.Builder
	b.WriteString(emb)
	b.WriteByte('/')
	b.WriteString(strconv.Itoa(dim))
	b.WriteByte('/')
	if req.Unrestricted {
		b.WriteByte('*')
		return b.String()
	}
	for i, g := range engine.SortedIDs(req.GroupIDs) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(g, 10))
	}
	return b.String()
}

// meanEntry returns the cache of key.
func (e *Engine) meanEntry(key string) *meanCache {
	e.meansMu.Lock()
	defer e.meansMu.Unlock()
	if e.means == nil || len(e.means) >= maxMeanCaches && e.means[key] == nil {
		e.means = map[string]*meanCache{}
	}
	c := e.means[key]
	if c == nil {
		c = &meanCache{}
		e.means[key] = c
	}
	return c
}

// MeanContentVector implements engine.VectorMean: the mean of the content
// passage vectors of length dim of the documents req's caller can see
// (the visibility filter of every search, so no query's shift depends on
// documents the caller cannot see), from at most meanSample documents per
// shard drawn in a fixed random order (meanBody); nil when there are
// none. A mean is kept per embedder recorded and visibility, and taken
// again once the documents with passages it covers have changed by an
// eighth: a call within e.meanRecount of the last count is served from
// the cache, a later one costs one size-0 count (meanCountBody) while
// the mean holds, and the aggregation when it does not.
func (e *Engine) MeanContentVector(ctx context.Context, req engine.Request, dim int) ([]float32, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	if dim != e.cfg.Dimensions || dim <= 0 || !req.Unrestricted && len(req.GroupIDs) == 0 {
		// No vector of that length here, or a caller who sees nothing.
		return nil, nil
	}
	emb := ""
	if id, ok, err := e.Embedder(ctx); err != nil {
		return nil, err
	} else if ok {
		emb = id.String()
	}
	c := e.meanEntry(meanKey(emb, req, dim))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ok && time.Since(c.counted) < e.meanRecount {
		return slices.Clone(c.v), nil
	}
	if c.ok {
		r, err := e.search(ctx, meanCountBody(req, e.timeout(ctx)))
		if err != nil {
			return nil, fmt.Errorf("opensearchengine: mean vector: %w", err)
		}
		if n := totalOf(r); 8*abs64(n-c.docs) <= c.docs {
			c.counted = time.Now()
			return slices.Clone(c.v), nil
		}
	}
	r, err := e.search(ctx, meanBody(req, dim, e.timeout(ctx)))
	if err != nil {
		return nil, fmt.Errorf("opensearchengine: mean vector: %w", err)
	}
	m, err := r.meanOf(dim)
	if err != nil {
		return nil, err
	}
	c.v, c.docs, c.ok, c.counted = m, totalOf(r), true, time.Now()
	return slices.Clone(m), nil
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
