package searchsvc

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/embed"
	folderv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"
	searchv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/search/v1"
	"github.com/docrepo/docrepo/pkg/metrics"
	"github.com/docrepo/docrepo/pkg/search/dsl"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// fieldFolders is the multi-valued folder field.
const fieldFolders = "filesbelongto"

// DefaultTimeout is the default server-side search timeout.
const DefaultTimeout = 10 * time.Second

var metricLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "docrepo_search_duration_seconds",
	Help:    "Search latency in the search service (parse, embed, engine, response), by mode (dsl.Mode) and outcome (ok, invalid, timeout, error).",
	Buckets: metrics.LatencyBuckets,
}, []string{"mode", "outcome"})

// textEmbedder is what the service needs of an embedder: the same one the
// indexer uses (pkg/embed). Query vectors and the second stage are built
// by engine.PrepareVector, the query side both engines share.
type textEmbedder = engine.TextEmbedder

// pinner is implemented by engine.Switchable: an engine that a rebuild
// can replace, pinned for the calls of one search.
type pinner interface {
	Pin() (engine.Engine, func())
}

// Service implements SearchService.
type Service struct {
	searchv1.UnimplementedSearchServiceServer
	eng   engine.Engine
	emb   textEmbedder
	embID *embed.Identity // nil when emb reports no identity
	// prev embeds queries against an index that still holds the vectors
	// of the embedder it is being re-embedded from (prevID).
	prev    textEmbedder
	prevID  embed.Identity
	folders FolderLister
	timeout time.Duration
	log     *slog.Logger
}

// NewService returns the search service over eng, embedding vector query
// text with emb, asking folders which folders a caller can see (nil: none,
// so filesbelongto shows nothing to callers bound by groups), and giving up
// on a search after timeout (DefaultTimeout when 0).
func NewService(eng engine.Engine, emb textEmbedder, folders FolderLister, timeout time.Duration, log *slog.Logger) *Service {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if log == nil {
		log = slog.Default()
	}
	s := &Service{eng: eng, emb: emb, folders: folders, timeout: timeout, log: log}
	if ider, ok := emb.(embed.Identifier); ok {
		id := ider.Identity()
		s.embID = &id
	}
	return s
}

// ReembeddingHeader is the response metadata (HTTP header
// Docrepo-Reembedding through the gateway) of a search answered while the
// index is re-embedded with a new embedder (DOCREPO_EMBEDDER_CHANGE=
// rebuild): its value names the embedder whose vectors the index in use
// still holds, which vector clauses were ranked with (docs/api.md §4.8).
const ReembeddingHeader = "docrepo-reembedding"

// SetPreviousEmbedder gives the service the embedder an index being
// re-embedded was built with (pkg/indexing: Settings.EmbedderFor): until
// the re-embedded index is in use, vector queries are embedded with it and
// ranked against the old vectors, instead of answering 503. emb must
// report its identity (embed.Identifier); one that does not is ignored.
func (s *Service) SetPreviousEmbedder(emb textEmbedder) {
	if ider, ok := emb.(embed.Identifier); ok {
		s.prev, s.prevID = emb, ider.Identity()
	}
}

// errReembedding answers a vector search while the index holds vectors of
// another embedder than the one queries are embedded with, and that
// embedder cannot be built here (an index of unknown embedder, a model no
// longer configured): it is being re-embedded (DOCREPO_EMBEDDER_CHANGE=
// rebuild, pkg/indexing).
var errReembedding = apierr.Unavailable("Vector search is unavailable while the index is re-embedded with a new embedder; full-text and metadata search work")

// vectorSpace returns the embedder whose vectors eng holds, to embed a
// query with: the service's own, or, while the index is re-embedded, the
// previous one when the service has it (errReembedding when not). old is
// the identity eng records when it is not the service's embedder's (the
// index is being re-embedded), else nil.
func (s *Service) vectorSpace(ctx context.Context, eng engine.Engine) (emb textEmbedder, old *embed.Identity, err error) {
	if s.embID == nil {
		return s.emb, nil, nil
	}
	got, ok, err := eng.Embedder(ctx)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case !ok || got.Compatible(*s.embID):
		return s.emb, nil, nil
	case s.prev != nil && got.Compatible(s.prevID):
		return s.prev, &got, nil
	}
	return nil, &got, errReembedding
}

// Search implements SearchService.Search (docs/api.md §4.8).
func (s *Service) Search(ctx context.Context, req *searchv1.SearchRequest) (*searchv1.SearchResponse, error) {
	start := time.Now()
	mode := "invalid"
	outcome := "ok"
	defer func() { metricLatency.WithLabelValues(mode, outcome).Observe(time.Since(start).Seconds()) }()

	p, err := auth.Caller(ctx)
	if err != nil {
		outcome = "error"
		return nil, err
	}
	q, err := dsl.Parse(toDSL(req))
	if err != nil {
		outcome = "invalid"
		return nil, invalid(err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	// filesbelongto is about the folders the caller can see, in filters
	// and in results alike.
	var visibleFolders []int64
	restrictFolderIDs := !p.Unrestricted() && usesFolders(q)
	if restrictFolderIDs {
		if visibleFolders, err = s.visibleFolders(ctx); err != nil {
			outcome = s.failure(ctx, err)
			return nil, err
		}
		if q.Where != nil {
			q.Where = restrictFolders(q.Where, visibleFolders)
		}
	}
	plan, err := q.Plan()
	if err != nil {
		outcome = "invalid"
		return nil, invalid(err)
	}
	mode = plan.Mode.String()

	ereq := engine.Request{Query: q, Plan: plan, GroupIDs: p.GroupIDs, Unrestricted: p.Unrestricted()}
	// One index for the whole search: a rebuild that switches in the
	// re-embedded index meanwhile waits, so a query embedded for the old
	// vectors is never ranked against the new ones.
	eng := s.eng
	if pin, ok := s.eng.(pinner); ok {
		e, release := pin.Pin()
		defer release()
		eng = e
	}
	emb, old, err := s.vectorSpace(ctx, eng)
	if old != nil {
		_ = grpc.SetHeader(ctx, metadata.Pairs(ReembeddingHeader, old.String()))
	}
	if plan.Vector != nil {
		if err != nil {
			if errors.Is(err, errReembedding) {
				outcome = "error"
				return nil, err
			}
			outcome = s.failure(ctx, err)
			return nil, s.searchError(ctx, err, "engine embedder")
		}
		if err := engine.PrepareVector(ctx, emb, eng, &ereq); err != nil {
			outcome = s.failure(ctx, err)
			return nil, s.searchError(ctx, err, "embed query")
		}
		if zeroVector(ereq.QueryVector) {
			// Nothing to be near: a query of stop words or punctuation
			// only embeds to the zero vector, equidistant from every
			// normalised vector; k arbitrary "nearest" documents would be
			// noise. The vector clause is a conjunct, so nothing matches.
			return buildResponse(q, engine.Result{})
		}
	}
	res, err := eng.Search(ctx, ereq)
	if err != nil {
		outcome = s.failure(ctx, err)
		return nil, s.searchError(ctx, err, "engine search")
	}
	if restrictFolderIDs {
		for i := range res.Hits {
			if ids, ok := res.Hits[i].Fields[fieldFolders].([]int64); ok {
				res.Hits[i].Fields[fieldFolders] = visibleOnly(ids, visibleFolders)
			}
		}
	}
	resp, err := buildResponse(q, res)
	if err != nil {
		outcome = "error"
		return nil, apierr.Internal(err)
	}
	return resp, nil
}

// visibleFolders asks the folder service, as the caller, which folders the
// caller can see (ascending).
func (s *Service) visibleFolders(ctx context.Context) ([]int64, error) {
	if s.folders == nil {
		return nil, nil
	}
	resp, err := s.folders.VisibleFolderIds(ctx, &folderv1.VisibleFolderIdsRequest{})
	if err != nil {
		if _, ok := status.FromError(err); ok {
			return nil, err
		}
		return nil, apierr.Internal(err)
	}
	return resp.GetFolderIds(), nil
}

func (s *Service) failure(ctx context.Context, err error) string {
	var de *dsl.Error
	switch {
	case errors.As(err, &de):
		return "invalid"
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "timeout"
	}
	return "error"
}

// searchError maps an embedder or engine failure to the client's error.
func (s *Service) searchError(ctx context.Context, err error, what string) error {
	var de *dsl.Error
	switch {
	case errors.As(err, &de):
		// The engine refuses a query it cannot run (e.g. a prefix
		// matching too many terms): the client can fix it.
		return apierr.Invalid("%s", de.Detail)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		s.log.WarnContext(ctx, "search timed out", "step", what, "timeout", s.timeout)
		return apierr.Timeout("Gateway Timeout")
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		return status.Error(codes.Canceled, "Request cancelled")
	}
	s.log.ErrorContext(ctx, "search failed", "step", what, "error", err)
	return apierr.Internal(err)
}

func invalid(err error) error {
	var de *dsl.Error
	if errors.As(err, &de) {
		return apierr.Invalid("%s", de.Detail)
	}
	return apierr.Invalid("%s", err.Error())
}

// toDSL converts the protobuf request to the DSL's request. where is
// already a JSON object (Struct); select, sort and options are typed by the
// proto, and the gateway rejects unknown members and wrong JSON types
// before they get here.
func toDSL(req *searchv1.SearchRequest) dsl.Request {
	var r dsl.Request
	if w := req.GetWhere(); w != nil {
		r.Where = w.AsMap()
	}
	r.Select = req.GetSelect()
	for _, s := range req.GetSort() {
		r.Sort = append(r.Sort, dsl.SortInput{Field: s.GetField(), Direction: s.GetDirection()})
	}
	if req.Limit != nil {
		n := int(req.GetLimit())
		r.Limit = &n
	}
	if req.Offset != nil {
		n := int(req.GetOffset())
		r.Offset = &n
	}
	if o := req.GetOptions(); o != nil {
		r.Options = map[string]any{}
		if o.IncludeHighlights != nil {
			r.Options["include_highlights"] = o.GetIncludeHighlights()
		}
		if o.HighlightLength != nil {
			r.Options["highlight_length"] = float64(o.GetHighlightLength())
		}
		if o.VectorK != nil {
			r.Options["vector_k"] = float64(o.GetVectorK())
		}
	}
	return r
}

// buildResponse renders the engine's page as the API's results: id always,
// _score (number or null), _highlights when asked for, and every selected
// field (null when the document lacks it).
func buildResponse(q *dsl.Query, res engine.Result) (*searchv1.SearchResponse, error) {
	out := &searchv1.SearchResponse{Total: res.Total, Offset: int32(q.Offset), Limit: int32(q.Limit)}
	highlights := q.WantsHighlights()
	out.Results = make([]*structpb.Struct, 0, len(res.Hits))
	for _, h := range res.Hits {
		fields := make(map[string]*structpb.Value, len(q.Select)+2)
		fields[dsl.FieldID] = structpb.NewNumberValue(float64(h.ID))
		if h.Score != nil {
			fields[dsl.FieldScore] = structpb.NewNumberValue(*h.Score)
		} else {
			fields[dsl.FieldScore] = structpb.NewNullValue()
		}
		if highlights {
			vals := make([]*structpb.Value, len(h.Highlights))
			for i, s := range h.Highlights {
				vals[i] = structpb.NewStringValue(s)
			}
			fields[dsl.FieldHighlights] = structpb.NewListValue(&structpb.ListValue{Values: vals})
		}
		for _, name := range q.Select {
			if name == dsl.FieldID || name == dsl.FieldScore || name == dsl.FieldHighlights {
				continue
			}
			fv := h.Fields[name]
			if name == fieldFolders && fv == nil {
				fv = []int64{} // a multi-valued field: no folders is an empty list
			}
			v, err := fieldValue(fv)
			if err != nil {
				return nil, err
			}
			fields[name] = v
		}
		out.Results = append(out.Results, &structpb.Struct{Fields: fields})
	}
	return out, nil
}

// fieldValue converts an engine field value (see engine.Hit.Fields).
func fieldValue(v any) (*structpb.Value, error) {
	switch x := v.(type) {
	case nil:
		return structpb.NewNullValue(), nil
	case string:
		return structpb.NewStringValue(x), nil
	case *string:
		if x == nil {
			return structpb.NewNullValue(), nil
		}
		return structpb.NewStringValue(*x), nil
	case bool:
		return structpb.NewBoolValue(x), nil
	case int64:
		return structpb.NewNumberValue(float64(x)), nil
	case int:
		return structpb.NewNumberValue(float64(x)), nil
	case float64:
		return structpb.NewNumberValue(x), nil
	case time.Time:
		return structpb.NewStringValue(x.UTC().Format(time.RFC3339Nano)), nil
	case *time.Time:
		if x == nil {
			return structpb.NewNullValue(), nil
		}
		return structpb.NewStringValue(x.UTC().Format(time.RFC3339Nano)), nil
	case []int64:
		vals := make([]*structpb.Value, len(x))
		for i, n := range x {
			vals[i] = structpb.NewNumberValue(float64(n))
		}
		return structpb.NewListValue(&structpb.ListValue{Values: vals}), nil
	}
	return nil, errors.New("searchsvc: unsupported field value type")
}

// zeroVector reports whether v has no non-zero component.
func zeroVector(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// RegisterMetrics registers the searchsvc metrics on reg (pkg/metrics).
func RegisterMetrics(reg prometheus.Registerer) error {
	return metrics.Register(reg,
		metricLatency,
		metricGateOverruns,
	)
}
