package searchsvc

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/embed"
	folderv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"
	searchv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/search/v1"
	"github.com/docrepo/docrepo/pkg/search/bleveengine"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

func ptr[T any](v T) *T { return &v }

// newTestService indexes docs into an in-memory embedded engine the way
// the indexer does (vectors from the same embedder) and returns the service.
func newTestService(t *testing.T, timeout time.Duration, wrap func(engine.Engine) engine.Engine, docs ...engine.Document) *Service {
	t.Helper()
	eng, err := bleveengine.Open("", bleveengine.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	emb, err := embed.NewHash(256)
	if err != nil {
		t.Fatal(err)
	}
	for i := range docs {
		v, _ := emb.Embed(context.Background(), []string{docs[i].Content, engine.MetadataText(&docs[i])})
		docs[i].ContentVectors, docs[i].MetadataVector = [][]float32{v[0]}, v[1]
	}
	if _, err := eng.Upsert(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	var e engine.Engine = eng
	if wrap != nil {
		e = wrap(e)
	}
	return NewService(e, emb, visibleFolders{5, 6}, timeout, nil)
}

// visibleFolders stands in for the folder service's client: the caller
// sees exactly these folders.
type visibleFolders []int64

func (v visibleFolders) VisibleFolderIds(context.Context, *folderv1.VisibleFolderIdsRequest, ...grpc.CallOption) (*folderv1.VisibleFolderIdsResponse, error) {
	return &folderv1.VisibleFolderIdsResponse{FolderIds: v}, nil
}

func userCtx(groups ...int64) context.Context {
	return auth.WithPrincipal(context.Background(), &auth.Principal{UserID: 1, GroupIDs: groups, Scopes: []string{auth.ScopeSearch}})
}

func request(t *testing.T, js string) *searchv1.SearchRequest {
	t.Helper()
	var r searchv1.SearchRequest
	if err := protojson.Unmarshal([]byte(js), &r); err != nil {
		t.Fatalf("request %s: %v", js, err)
	}
	return &r
}

var testDocs = []engine.Document{
	{ID: 1, Rev: 1, GroupIDs: []int64{10}, FolderIDs: []int64{5, 6}, Description: ptr("Annual report"), DocType: ptr("report"),
		Date: ptr(time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)), Content: "The annual report on vaccination <script>alert(1)</script> programmes."},
	{ID: 2, Rev: 1, GroupIDs: []int64{10}, Description: ptr("Invoice"), DocType: ptr("invoice"), Content: "Invoice for vaccines delivered."},
	{ID: 3, Rev: 1, GroupIDs: []int64{20}, Description: ptr("Secret report"), DocType: ptr("report"), Content: "A secret annual report on vaccination."},
}

func TestSearchResponseShapeAndVisibility(t *testing.T) {
	s := newTestService(t, 0, nil, testDocs...)
	tests := []struct {
		name      string
		ctx       context.Context
		req       string
		wantTotal int64
		wantIDs   []float64
	}{
		{name: "fts sees only the caller's groups", ctx: userCtx(10), req: `{"where":{"fts":{"query":"report"}}}`, wantTotal: 1, wantIDs: []float64{1}},
		{name: "other group", ctx: userCtx(20), req: `{"where":{"fts":{"query":"report"}}}`, wantTotal: 1, wantIDs: []float64{3}},
		{name: "both groups", ctx: userCtx(10, 20), req: `{"where":{"fts":{"query":"annual report"}},"sort":[{"field":"id","direction":"asc"}]}`, wantTotal: 2, wantIDs: []float64{1, 3}},
		{name: "no groups sees nothing", ctx: userCtx(), req: `{}`, wantTotal: 0},
		{name: "metadata only", ctx: userCtx(10, 20), req: `{"where":{"eq":{"field":"doc_type","value":"report"}},"sort":[{"field":"id","direction":"desc"}]}`, wantTotal: 2, wantIDs: []float64{3, 1}},
		{name: "internal caller sees all", ctx: auth.WithPrincipal(context.Background(), &auth.Principal{Scopes: []string{auth.ScopeInternal}}), req: `{"sort":[{"field":"id"}]}`, wantTotal: 3, wantIDs: []float64{1, 2, 3}},
		{name: "vector", ctx: userCtx(10), req: `{"where":{"vector":{"target":"content","query":"vaccines invoice"}},"limit":1}`, wantTotal: 2, wantIDs: []float64{2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := s.Search(tc.ctx, request(t, tc.req))
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetTotal() != tc.wantTotal {
				t.Errorf("total = %d, want %d", resp.GetTotal(), tc.wantTotal)
			}
			var ids []float64
			for _, r := range resp.GetResults() {
				ids = append(ids, r.GetFields()["id"].GetNumberValue())
			}
			if len(ids) != len(tc.wantIDs) {
				t.Fatalf("ids = %v, want %v", ids, tc.wantIDs)
			}
			for i := range ids {
				if ids[i] != tc.wantIDs[i] {
					t.Fatalf("ids = %v, want %v", ids, tc.wantIDs)
				}
			}
		})
	}
}

func TestSearchFields(t *testing.T) {
	s := newTestService(t, 0, nil, testDocs...)
	resp, err := s.Search(userCtx(10), request(t, `{"where":{"fts":{"query":"\"vaccination\""}},"select":["date","filesbelongto","doc_number","_highlights"],"options":{"highlight_length":100}}`))
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetLimit() != 20 || resp.GetOffset() != 0 {
		t.Errorf("limit/offset = %d/%d, want 20/0", resp.GetLimit(), resp.GetOffset())
	}
	if len(resp.GetResults()) != 1 {
		t.Fatalf("results = %v", resp.GetResults())
	}
	f := resp.GetResults()[0].GetFields()
	if got := f["date"].GetStringValue(); got != "2024-03-01T00:00:00Z" {
		t.Errorf("date = %q, want RFC 3339", got)
	}
	if l := f["filesbelongto"].GetListValue().GetValues(); len(l) != 2 || l[0].GetNumberValue() != 5 || l[1].GetNumberValue() != 6 {
		t.Errorf("filesbelongto = %v, want [5 6]", f["filesbelongto"])
	}
	if _, ok := f["doc_number"].GetKind().(*structpb.Value_NullValue); !ok {
		t.Errorf("absent doc_number = %v, want null", f["doc_number"])
	}
	if _, ok := f["_score"].GetKind().(*structpb.Value_NumberValue); !ok {
		t.Errorf("_score = %v, want a number in FTS mode", f["_score"])
	}
	hl := f["_highlights"].GetListValue().GetValues()
	if len(hl) == 0 {
		t.Fatalf("no highlights")
	}
	if h := hl[0].GetStringValue(); !contains(h, "<b>vaccination</b>") || contains(h, "<script>") {
		t.Errorf("highlight = %q, want <b> marks and escaped markup", h)
	}
	if _, ok := f["description"]; ok {
		t.Errorf("unselected description returned")
	}

	resp, err = s.Search(userCtx(10), request(t, `{"where":{"eq":{"field":"doc_type","value":"report"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := resp.GetResults()[0].GetFields()["_score"].GetKind().(*structpb.Value_NullValue); !ok {
		t.Errorf("metadata-only _score = %v, want null", resp.GetResults()[0].GetFields()["_score"])
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestSearchInvalid(t *testing.T) {
	s := newTestService(t, 0, nil, testDocs...)
	tests := []struct {
		name, req, detail string
	}{
		{name: "unknown field", req: `{"where":{"eq":{"field":"Doc_Type","value":"x"}}}`, detail: "Unknown field Doc_Type in eq clause. Field names must be lowercase snake_case"},
		{name: "limit 0", req: `{"limit":0}`},
		{name: "limit 501", req: `{"limit":501}`},
		{name: "bad fts", req: `{"where":{"fts":{"query":"a OR"}}}`},
		{name: "unknown select", req: `{"select":["nope"]}`, detail: "Unknown field nope in select clause. Field names must be lowercase snake_case"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Search(userCtx(10), request(t, tc.req))
			var ae *apierr.Error
			if !errors.As(err, &ae) || ae.Kind != apierr.KindInvalid {
				t.Fatalf("err = %v, want a 400", err)
			}
			if tc.detail != "" && ae.Detail != tc.detail {
				t.Errorf("detail = %q, want %q", ae.Detail, tc.detail)
			}
		})
	}
}

// slowEngine delays every search until its context ends.
type slowEngine struct{ engine.Engine }

func (s slowEngine) Search(ctx context.Context, req engine.Request) (engine.Result, error) {
	<-ctx.Done()
	return engine.Result{}, ctx.Err()
}

func TestSearchTimeout(t *testing.T) {
	s := newTestService(t, 50*time.Millisecond, func(e engine.Engine) engine.Engine { return slowEngine{e} }, testDocs...)
	start := time.Now()
	_, err := s.Search(userCtx(10), request(t, `{"where":{"fts":{"query":"report"}}}`))
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Kind != apierr.KindTimeout || ae.Detail != "Gateway Timeout" {
		t.Fatalf("err = %v, want 504 Gateway Timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("timeout took %v", d)
	}
}

// prefixEmbedder embeds documents and queries differently, as a model
// with a query prefix does.
type prefixEmbedder struct{ queries, documents int }

func (p *prefixEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	p.documents += len(texts)
	return make([][]float32, len(texts)), nil
}

func (p *prefixEmbedder) EmbedQueries(_ context.Context, texts []string) ([][]float32, error) {
	p.queries += len(texts)
	return make([][]float32, len(texts)), nil
}

func TestQueriesEmbeddedAsQueries(t *testing.T) {
	tests := []struct {
		name          string
		hideQueryForm bool
		wantQueries   int
		wantDocuments int
	}{
		{name: "embedder with a query form", wantQueries: 1},
		{name: "embedder without one", hideQueryForm: true, wantDocuments: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &prefixEmbedder{}
			s := &Service{emb: p}
			if tc.hideQueryForm {
				s.emb = struct{ textEmbedder }{p}
			}
			if _, err := engine.EmbedQueries(context.Background(), s.emb, nil, []string{"heart attack"}, nil); err != nil {
				t.Fatal(err)
			}
			if p.queries != tc.wantQueries || p.documents != tc.wantDocuments {
				t.Errorf("queries %d, documents %d; want %d, %d", p.queries, p.documents, tc.wantQueries, tc.wantDocuments)
			}
		})
	}
}

// headerStream records the response metadata a service sets.
type headerStream struct {
	grpc.ServerTransportStream
	md metadata.MD
}

func (h *headerStream) Method() string { return "/docrepo.search.v1.SearchService/Search" }
func (h *headerStream) SetHeader(md metadata.MD) error {
	h.md = metadata.Join(h.md, md)
	return nil
}

// TestVectorSearchWhileReembedding: while the index records another
// embedder than the service's (it is being re-embedded), vector searches
// are embedded with that embedder when the service has it and answered
// from the old vectors, else answer Unavailable; full text works either
// way, and every answer carries the re-embedding header naming the
// index's embedder. Once the index records the service's embedder again,
// vector search uses it and the header is gone.
func TestVectorSearchWhileReembedding(t *testing.T) {
	old, _ := embed.NewHash(256) // the vectors newTestService indexed
	tests := []struct {
		name     string
		previous textEmbedder
		// wantVector is the vector search's total; -1: Unavailable.
		wantVector int64
	}{
		{name: "previous embedder known", previous: old, wantVector: 2},
		{name: "previous embedder unknown", wantVector: -1},
		{name: "previous embedder of other vectors", previous: mustHash(t, 128), wantVector: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var eng engine.Engine
			s := newTestService(t, 0, func(e engine.Engine) engine.Engine { eng = engine.NewSwitchable(e); return eng }, testDocs...)
			ctx := context.Background()
			// The service now embeds with another embedder, as after a
			// restart under a new DOCREPO_EMBEDDER.
			s.emb, s.embID = mustHash(t, 512), ptr(mustHash(t, 512).Identity())
			if tt.previous != nil {
				s.SetPreviousEmbedder(tt.previous)
			}
			if err := eng.SetEmbedder(ctx, old.Identity()); err != nil {
				t.Fatal(err)
			}
			search := func(js string) (*searchv1.SearchResponse, metadata.MD, error) {
				hs := &headerStream{}
				resp, err := s.Search(grpc.NewContextWithServerTransportStream(userCtx(10), hs), request(t, js))
				return resp, hs.md, err
			}
			vector := `{"where":{"vector":{"target":"content","query":"vaccines invoice"}}}`
			hybrid := `{"where":{"and":[{"fts":{"query":"report"}},{"vector":{"target":"content","query":"annual report"}}]}}`
			fts := `{"where":{"fts":{"query":"report"}}}`
			resp, md, err := search(vector)
			switch ae := (*apierr.Error)(nil); {
			case tt.wantVector < 0 && (!errors.As(err, &ae) || ae.Kind != apierr.KindUnavailable):
				t.Fatalf("vector search without the index's embedder: %v, %v; want Unavailable", resp, err)
			case tt.wantVector >= 0 && (err != nil || resp.GetTotal() != tt.wantVector):
				t.Fatalf("vector search with the index's embedder: %v, %v; want %d results", resp, err, tt.wantVector)
			case tt.wantVector >= 0 && fmt.Sprint(md.Get(ReembeddingHeader)) != "["+old.Identity().String()+"]":
				t.Fatalf("vector search header %v, want %s: %s", md, ReembeddingHeader, old.Identity())
			}
			if tt.wantVector >= 0 {
				if resp, _, err := search(hybrid); err != nil || resp.GetTotal() != 1 {
					t.Fatalf("full text and vector meanwhile: %v, %v; want 1 result", resp, err)
				}
			}
			if resp, md, err := search(fts); err != nil || resp.GetTotal() != 1 || len(md.Get(ReembeddingHeader)) != 1 {
				t.Fatalf("full text meanwhile: %v, %v, header %v", resp, err, md)
			}
			// The re-embedded index is in use.
			if err := eng.SetEmbedder(ctx, *s.embID); err != nil {
				t.Fatal(err)
			}
			if _, md, err := search(vector); err != nil || len(md.Get(ReembeddingHeader)) != 0 {
				t.Fatalf("after the rebuild: %v, header %v", err, md)
			}
		})
	}
}

func mustHash(t *testing.T, dim int) *embed.Hash {
	t.Helper()
	h, err := embed.NewHash(dim)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// statsEmbedder records the word statistics it is given for each query.
type statsEmbedder struct {
	prefixEmbedder
	freqs [][]int64
	docs  []int64
}

func (e *statsEmbedder) EmbedQueriesWithStats(ctx context.Context, texts []string, stats embed.WordStats) ([][]float32, error) {
	if stats == nil {
		return e.EmbedQueries(ctx, texts)
	}
	freqs, docs, err := stats(ctx, []string{"report", "vaccines"})
	if err != nil {
		return nil, err
	}
	e.freqs, e.docs = append(e.freqs, freqs), append(e.docs, docs)
	return e.EmbedQueries(ctx, texts)
}

// TestQueryVectorsWeighedByTheCallersWords: for the content target the
// embedder is given the statistics of the documents the caller can see
// (engine.DocFreqs, as BM25 counts them); for metadata none. The counts
// are testDocs' by hand: "report" is in documents 1 (group 10) and 3
// (group 20); "vaccines" stems to vaccin, as do "vaccination" (1, 3) and
// "vaccines" (2).
func TestQueryVectorsWeighedByTheCallersWords(t *testing.T) {
	s := newTestService(t, 0, nil, testDocs...)
	e := &statsEmbedder{}
	s.emb = e
	const content = `{"where":{"vector":{"target":"content","query":"vaccines report"}}}`
	for _, tc := range []struct {
		name      string
		where     string
		ctx       context.Context
		wantStats bool
		wantFreqs []int64 // of report, vaccines
		wantDocs  int64
	}{
		{name: "content, group 10", where: content, ctx: userCtx(10), wantStats: true, wantFreqs: []int64{1, 2}, wantDocs: 2},
		{name: "content, group 20", where: content, ctx: userCtx(20), wantStats: true, wantFreqs: []int64{1, 1}, wantDocs: 1},
		{name: "content, groups 10 and 20", where: content, ctx: userCtx(10, 20), wantStats: true, wantFreqs: []int64{2, 3}, wantDocs: 3},
		{name: "metadata", where: `{"where":{"vector":{"target":"metadata","query":"vaccines report"}}}`, ctx: userCtx(10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(e.freqs)
			if _, err := s.Search(tc.ctx, request(t, tc.where)); err != nil {
				t.Fatal(err)
			}
			if got := len(e.freqs) > before; got != tc.wantStats {
				t.Fatalf("statistics given: %v, want %v", got, tc.wantStats)
			}
			if tc.wantStats {
				got, docs := e.freqs[len(e.freqs)-1], e.docs[len(e.docs)-1]
				if fmt.Sprint(got) != fmt.Sprint(tc.wantFreqs) || docs != tc.wantDocs {
					t.Errorf("statistics %v of %d documents, want %v of %d", got, docs, tc.wantFreqs, tc.wantDocs)
				}
			}
		})
	}
}
