package opensearchengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docrepo/docrepo/pkg/search/dsl"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// MinVersion is the oldest OpenSearch release the engine supports: 3.1
// added matched_fields to the unified highlighter, which highlights stemmed
// and exact matches in the same snippets. (Efficient k-NN filtering with
// the lucene engine dates from 2.4.)
var MinVersion = [2]int{3, 1}

// Engine is the OpenSearch implementation of engine.Engine. It is safe for
// concurrent use.
type Engine struct {
	cfg  Config
	c    *client
	dims map[dsl.VectorTarget]int
	log  *slog.Logger
	// generation: the engine of a rebuild's new index (Generation.Engine),
	// writing to a concrete index with its parent's client.
	generation bool
	closed     atomic.Bool

	embMu sync.Mutex
	emb   embedderCache // see Embedder

	meansMu sync.Mutex
	means   map[string]*meanCache // see MeanContentVector
	// meanRecount: meanRecount, or another interval in tests.
	meanRecount time.Duration
}

var _ engine.Engine = (*Engine)(nil)

// New connects to OpenSearch, checks its version and, when nothing named
// cfg.Index exists, creates the index <Index>-v1 (IndexBody) with the
// alias cfg.Index (see Generation). When the alias or an index of that
// name exists, the vector dimensions of the index behind it must match
// cfg.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	e := &Engine{
		cfg:         cfg,
		c:           c,
		log:         cfg.Logger,
		meanRecount: meanRecount,
		dims: map[dsl.VectorTarget]int{
			dsl.TargetContent:  cfg.Dimensions,
			dsl.TargetMetadata: cfg.MetadataDimensions,
		},
	}
	if err := e.checkVersion(ctx); err != nil {
		c.close()
		return nil, err
	}
	if err := e.ensureIndex(ctx); err != nil {
		c.close()
		return nil, err
	}
	return e, nil
}

// Index returns the name every read and write goes to: the alias (or, for
// an index made before versioned indexes, the index itself).
func (e *Engine) Index() string { return e.cfg.Index }

func (e *Engine) checkVersion(ctx context.Context) error {
	res, err := e.c.do(ctx, http.MethodGet, "/", nil, nil, "")
	if err != nil {
		return err
	}
	if res.Status != http.StatusOK {
		return newResponseError(http.MethodGet, "/", res.Status, res.Body)
	}
	var info struct {
		Version struct {
			Distribution string `json:"distribution"`
			Number       string `json:"number"`
		} `json:"version"`
	}
	if err := json.Unmarshal(res.Body, &info); err != nil {
		return fmt.Errorf("opensearchengine: GET /: %w", err)
	}
	major, minor, ok := parseVersion(info.Version.Number)
	if info.Version.Distribution != "opensearch" || !ok {
		return fmt.Errorf("opensearchengine: the server is not OpenSearch (distribution %q, version %q)", info.Version.Distribution, info.Version.Number)
	}
	if major < MinVersion[0] || (major == MinVersion[0] && minor < MinVersion[1]) {
		return fmt.Errorf("opensearchengine: OpenSearch %s is too old: %d.%d or later is required (unified highlighter matched_fields)",
			info.Version.Number, MinVersion[0], MinVersion[1])
	}
	return nil
}

func parseVersion(s string) (major, minor int, ok bool) {
	var rest string
	for i, r := range s {
		if r == '.' {
			m, err := strconv.Atoi(s[:i])
			if err != nil {
				return 0, 0, false
			}
			major, rest = m, s[i+1:]
			break
		}
	}
	if rest == "" {
		return 0, 0, false
	}
	end := len(rest)
	for i, r := range rest {
		if r < '0' || r > '9' {
			end = i
			break
		}
	}
	n, err := strconv.Atoi(rest[:end])
	if err != nil {
		return 0, 0, false
	}
	return major, n, true
}

// errForeignIndex: the index exists but this engine did not create it (a
// write auto-created it with dynamic mappings, or it is someone else's).
var errForeignIndex = errors.New("it was not created by this engine")

func (e *Engine) indexPath(suffix string) string { return "/" + e.cfg.Index + suffix }

// checkMapping verifies the dimensions of the vector fields of every
// index behind the name (one, or several behind an alias).
func (e *Engine) checkMapping(body []byte) error {
	type property struct {
		Type       string              `json:"type"`
		Dimension  int                 `json:"dimension"`
		Properties map[string]property `json:"properties"`
	}
	var m map[string]struct {
		Mappings struct {
			Properties map[string]property `json:"properties"`
		} `json:"mappings"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return fmt.Errorf("opensearchengine: decoding the mapping of %s: %w", e.cfg.Index, err)
	}
	for index, im := range m {
		props := im.Mappings.Properties
		if p, old := props[fieldContentVector]; old && p.Type == "knn_vector" {
			if _, ok := props[fieldPassages]; !ok {
				return fmt.Errorf("opensearchengine: index %s was created before content passages (it has %s, not %s): "+
					"create a new index (set %s to a new name, or delete this one) and reindex into it (docrepoctl reindex)",
					index, fieldContentVector, fieldPassages, EnvIndex)
			}
		}
		passages := props[fieldPassages]
		for field, f := range map[string]struct {
			p    property
			want int
		}{
			fieldPassages + "." + fieldPassageVector: {passages.Properties[fieldPassageVector], e.cfg.Dimensions},
			fieldMetadataVector:                      {props[fieldMetadataVector], e.cfg.MetadataDimensions},
		} {
			if f.p.Type != "knn_vector" || field != fieldMetadataVector && passages.Type != "nested" {
				return fmt.Errorf("opensearchengine: index %s has no knn_vector field %s: %w", index, field, errForeignIndex)
			}
			if f.p.Dimension != f.want {
				return fmt.Errorf("opensearchengine: index %s has %d-dimensional %s, the embedder gives %d: reindex into a new index",
					index, f.p.Dimension, field, f.want)
			}
		}
	}
	return nil
}

func (e *Engine) check() error {
	if e.closed.Load() {
		return engine.ErrClosed
	}
	return nil
}

// Revision returns the stored revision: the document's external _version
// (a realtime get, so it sees writes not yet refreshed).
func (e *Engine) Revision(ctx context.Context, id int64) (int64, bool, error) {
	if err := e.check(); err != nil {
		return 0, false, err
	}
	path := e.indexPath("/_doc/" + strconv.FormatInt(id, 10))
	res, err := e.c.do(ctx, http.MethodGet, path, url.Values{"_source": {"false"}}, nil, "")
	if err != nil {
		return 0, false, err
	}
	var got struct {
		Found   bool  `json:"found"`
		Version int64 `json:"_version"`
	}
	switch res.Status {
	case http.StatusOK, http.StatusNotFound:
		if err := json.Unmarshal(res.Body, &got); err != nil {
			if res.Status == http.StatusNotFound {
				// A 404 without a get body: the index itself is missing.
				return 0, false, newResponseError(http.MethodGet, path, res.Status, res.Body)
			}
			return 0, false, fmt.Errorf("opensearchengine: GET %s: %w", path, err)
		}
		if !got.Found {
			return 0, false, nil
		}
		return got.Version, true, nil
	}
	return 0, false, newResponseError(http.MethodGet, path, res.Status, res.Body)
}

// Count returns the number of documents (as of the last refresh).
func (e *Engine) Count(ctx context.Context) (int64, error) {
	if err := e.check(); err != nil {
		return 0, err
	}
	path := e.indexPath("/_count")
	res, err := e.c.do(ctx, http.MethodGet, path, nil, nil, "")
	if err != nil {
		return 0, err
	}
	if res.Status != http.StatusOK {
		return 0, newResponseError(http.MethodGet, path, res.Status, res.Body)
	}
	var got struct {
		Count int64 `json:"count"`
	}
	if err := json.Unmarshal(res.Body, &got); err != nil {
		return 0, fmt.Errorf("opensearchengine: GET %s: %w", path, err)
	}
	return got.Count, nil
}

// revisionsPage is how many documents one request of Revisions reads.
const revisionsPage = 5000

// Revisions returns every document of the index with its version (the
// document's rev, by external versioning), paging through the index in id
// order with search_after.
func (e *Engine) Revisions(ctx context.Context) (map[int64]int64, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	out := map[int64]int64{}
	path := e.indexPath("/_search")
	var after []any
	for {
		req := revisionsRequest(after)
		body, err := json.Marshal(req)
		if err != nil {
			return nil, err
		}
		res, err := e.c.do(ctx, http.MethodPost, path, nil, body, "application/json")
		if err != nil {
			return nil, err
		}
		if res.Status != http.StatusOK {
			return nil, newResponseError(http.MethodPost, path, res.Status, res.Body)
		}
		var got struct {
			Hits struct {
				Hits []struct {
					ID      string `json:"_id"`
					Version int64  `json:"_version"`
					Sort    []any  `json:"sort"`
				} `json:"hits"`
			} `json:"hits"`
		}
		if err := json.Unmarshal(res.Body, &got); err != nil {
			return nil, fmt.Errorf("opensearchengine: POST %s: %w", path, err)
		}
		for _, h := range got.Hits.Hits {
			id, err := strconv.ParseInt(h.ID, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("opensearchengine: document id %q is not a docrepo id", h.ID)
			}
			out[id] = h.Version
		}
		if len(got.Hits.Hits) < revisionsPage {
			return out, nil
		}
		after = got.Hits.Hits[len(got.Hits.Hits)-1].Sort
	}
}

// revisionsRequest is one page of Revisions: ids and versions only, in id
// order, after the sort values of the previous page's last hit.
func revisionsRequest(after []any) obj {
	req := obj{
		"size":             revisionsPage,
		"query":            obj{"match_all": obj{}},
		"_source":          false,
		"version":          true,
		"sort":             []any{obj{fieldID: obj{"order": "asc"}}},
		"track_total_hits": false,
	}
	if after != nil {
		req["search_after"] = after
	}
	return req
}

// Close releases the client (a Generation's engine shares its parent's,
// and leaves it open). Calls after Close return engine.ErrClosed.
func (e *Engine) Close() error {
	if e.closed.Swap(true) || e.generation {
		return nil
	}
	return e.c.close()
}

// Search executes a request (see searchPlan for how each mode runs).
func (e *Engine) Search(ctx context.Context, req engine.Request) (engine.Result, error) {
	if err := e.check(); err != nil {
		return engine.Result{}, err
	}
	p, err := planSearch(req, e.dims)
	if err != nil {
		return engine.Result{}, err
	}
	switch {
	case p.vectorOnly():
		r, err := e.search(ctx, p.vectorBody(e.timeout(ctx)))
		if err != nil {
			return engine.Result{}, err
		}
		hits := r.Hits.Hits
		if req.Rerank.Active() {
			if err := e.rerank(ctx, req.Rerank, hits); err != nil {
				return engine.Result{}, err
			}
		}
		if err := p.sortHits(hits); err != nil {
			return engine.Result{}, err
		}
		lo := min(p.q.Offset, len(hits))
		hi := min(lo+p.q.Limit, len(hits))
		return p.result(int64(len(hits)), hits[lo:hi])
	case p.knn != nil:
		r, err := e.search(ctx, p.vectorBody(e.timeout(ctx)))
		if err != nil {
			return engine.Result{}, err
		}
		ids := make([]int64, 0, len(r.Hits.Hits))
		for i := range r.Hits.Hits {
			id, err := hitID(&r.Hits.Hits[i])
			if err != nil {
				return engine.Result{}, err
			}
			ids = append(ids, id)
		}
		if len(ids) == 0 {
			return engine.Result{Hits: []engine.Hit{}}, nil
		}
		r, err = e.search(ctx, p.pageBody(ids, e.timeout(ctx)))
		if err != nil {
			return engine.Result{}, err
		}
		return p.result(totalOf(r), r.Hits.Hits)
	default:
		r, err := e.search(ctx, p.pageBody(nil, e.timeout(ctx)))
		if err != nil {
			return engine.Result{}, err
		}
		return p.result(totalOf(r), r.Hits.Hits)
	}
}

func totalOf(r *searchResponse) int64 {
	if r.Hits.Total == nil {
		return int64(len(r.Hits.Hits))
	}
	return r.Hits.Total.Value
}

func (p *searchPlan) result(total int64, raw []rawHit) (engine.Result, error) {
	out := engine.Result{Total: total, Hits: make([]engine.Hit, 0, len(raw))}
	for i := range raw {
		h, err := p.toHit(&raw[i])
		if err != nil {
			return engine.Result{}, err
		}
		out.Hits = append(out.Hits, h)
	}
	return out, nil
}

// timeout is the server-side limit of the next search: what is left
// before ctx's deadline less a margin (a tenth, at most 100ms) for the
// answer to travel back, or Config.SearchTimeout when that is shorter (0:
// none). OpenSearch then usually answers timed_out before ctx ends, rather
// than the client abandoning the request (which opensearch-go counts as a
// node failure when there are several nodes).
func (e *Engine) timeout(ctx context.Context) time.Duration {
	d := e.cfg.SearchTimeout
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		left -= min(left/10, 100*time.Millisecond)
		if d <= 0 || left < d {
			d = max(left, time.Millisecond)
		}
	}
	return d
}

// errServerTimeout is returned when OpenSearch stopped a search at its
// time limit (timed_out: true): the results would be partial.
var errServerTimeout = fmt.Errorf("opensearchengine: the search timed out on the server: %w", context.DeadlineExceeded)

func (e *Engine) search(ctx context.Context, body obj) (*searchResponse, error) {
	path := e.indexPath("/_search")
	res, err := e.c.doJSON(ctx, http.MethodPost, path, nil, body)
	if err != nil {
		return nil, err
	}
	if res.Status != http.StatusOK {
		rerr := newResponseError(http.MethodPost, path, res.Status, res.Body)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (%v)", ctx.Err(), rerr)
		}
		return nil, rerr
	}
	r, err := decodeSearch(res.Body)
	if err != nil {
		return nil, err
	}
	if r.TimedOut {
		return nil, errServerTimeout
	}
	return r, nil
}
