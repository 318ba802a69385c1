package indexing

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/docrepo/docrepo/pkg/embed"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/ocrjobs"
	"github.com/docrepo/docrepo/pkg/search/bleveengine"
	"github.com/docrepo/docrepo/pkg/search/engine"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// docStore is a document service for the indexer's tests: a real gRPC
// server (so streaming, status codes and cancellation behave as over the
// network) serving documents from memory. The real document service lives in
// another module and needs Postgres and a blob store; the end-to-end tests
// in gateway/e2e run the indexer against it.
type docStore struct {
	documentv1.UnimplementedDocumentServiceServer
	mu    sync.Mutex
	docs  map[int64]*storedDoc
	gets  atomic.Int64
	downs atomic.Int64
	// failDownloads makes DownloadFile fail with Unavailable.
	failDownloads atomic.Bool
	// failGets makes GetIndexDocument fail with Unavailable.
	failGets atomic.Bool
	// failLists makes that many ListDocumentIds calls fail with
	// Unavailable (counting down); lists counts the calls.
	failLists atomic.Int64
	lists     atomic.Int64
	// sources records SetContentSource calls by file id.
	sources map[int64]string
	// noBatch makes it a document service without the batch calls.
	noBatch atomic.Bool
	// batchGets counts GetIndexDocuments calls.
	batchGets atomic.Int64
}

type storedDoc struct {
	rev      int64
	desc     string
	docType  string
	groups   []int64
	folders  []int64
	file     []byte
	mime     string
	name     string
	declared int64  // image_size reported; len(file) when 0
	owner    string // entry person; alice when empty
}

func newDocStore() *docStore {
	return &docStore{docs: map[int64]*storedDoc{}, sources: map[int64]string{}}
}

// SetContentSource records the source of the document's current file, as
// the document service does.
func (s *docStore) SetContentSource(_ context.Context, req *documentv1.SetContentSourceRequest) (*documentv1.SetContentSourceResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.docs[req.GetDocId()]
	if !ok || d.file == nil || req.GetFileId() != req.GetDocId()*10+d.rev {
		return &documentv1.SetContentSourceResponse{}, nil
	}
	s.sources[req.GetFileId()] = req.GetSource()
	return &documentv1.SetContentSourceResponse{Applied: true}, nil
}

// source returns the recorded content source of a document's current file.
func (s *docStore) source(id int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.docs[id]
	if !ok {
		return ""
	}
	return s.sources[id*10+d.rev]
}

func (s *docStore) put(id int64, d *storedDoc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.docs[id] = d
}

func (s *docStore) remove(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.docs, id)
}

func (s *docStore) GetIndexDocument(_ context.Context, req *documentv1.GetIndexDocumentRequest) (*documentv1.GetIndexDocumentResponse, error) {
	s.gets.Add(1)
	if s.failGets.Load() {
		return nil, status.Error(codes.Unavailable, "document service down")
	}
	if req.GetDocId() <= 0 {
		return nil, status.Error(codes.InvalidArgument, "bad id")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.docs[req.GetDocId()]
	if !ok {
		return &documentv1.GetIndexDocumentResponse{Deleted: true}, nil
	}
	dt := d.docType
	owner := d.owner
	if owner == "" {
		owner = "alice"
	}
	out := &documentv1.IndexDocument{
		Document: &documentv1.Document{
			Id: req.GetDocId(), Description: d.desc, DocType: &dt, EntryPerson: owner,
			EntryDate: timestamppb.New(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)),
		},
		Rev:       d.rev,
		GroupIds:  d.groups,
		FolderIds: d.folders,
	}
	if d.file != nil {
		size := d.declared
		if size == 0 {
			size = int64(len(d.file))
		}
		sum := sha256.Sum256(d.file)
		out.File = &documentv1.IndexFile{Ownid: req.GetDocId()*10 + d.rev, Origname: d.name, ImageType: d.mime, ImageSize: size,
			ContentSource: s.sources[req.GetDocId()*10+d.rev], Filehash: hex.EncodeToString(sum[:])}
	}
	return &documentv1.GetIndexDocumentResponse{Document: out}, nil
}

// GetIndexDocuments answers as the document service does: in order, with
// files of at most inline_max_bytes inline. With noBatch it is an older
// document service that does not know the call.
func (s *docStore) GetIndexDocuments(ctx context.Context, req *documentv1.GetIndexDocumentsRequest) (*documentv1.GetIndexDocumentsResponse, error) {
	if s.noBatch.Load() {
		return nil, status.Error(codes.Unimplemented, "unknown method")
	}
	s.batchGets.Add(1)
	out := &documentv1.GetIndexDocumentsResponse{}
	for _, id := range req.GetDocIds() {
		r, err := s.GetIndexDocument(ctx, &documentv1.GetIndexDocumentRequest{DocId: id})
		if err != nil {
			return nil, err
		}
		if f := r.GetDocument().GetFile(); f != nil && f.GetImageSize() <= req.GetInlineMaxBytes() && !s.failDownloads.Load() {
			s.mu.Lock()
			f.Content, f.Inline = s.docs[id].file, true
			s.mu.Unlock()
		}
		out.Documents = append(out.Documents, r)
	}
	return out, nil
}

// SetContentSources records several sources, as the document service does.
func (s *docStore) SetContentSources(ctx context.Context, req *documentv1.SetContentSourcesRequest) (*documentv1.SetContentSourcesResponse, error) {
	if s.noBatch.Load() {
		return nil, status.Error(codes.Unimplemented, "unknown method")
	}
	out := &documentv1.SetContentSourcesResponse{}
	for _, r := range req.GetSources() {
		a, err := s.SetContentSource(ctx, r)
		if err != nil {
			return nil, err
		}
		out.Applied = append(out.Applied, a.GetApplied())
	}
	return out, nil
}

func (s *docStore) ListDocumentIds(_ context.Context, req *documentv1.ListDocumentIdsRequest) (*documentv1.ListDocumentIdsResponse, error) {
	s.lists.Add(1)
	if s.failLists.Add(-1) >= 0 {
		return nil, status.Error(codes.Unavailable, "document service not listening yet")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int64
	for id := range s.docs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	total := int64(len(ids))
	if req.GetAfterId() != 0 {
		total = 0 // as the document service: the first page's only
	}
	var page, revs, unread []int64
	for _, id := range ids {
		if id > req.GetAfterId() && len(page) < int(req.GetLimit()) {
			d := s.docs[id]
			page = append(page, id)
			revs = append(revs, d.rev)
			if _, read := s.sources[id*10+d.rev]; d.file != nil && !read {
				unread = append(unread, id)
			}
		}
	}
	return &documentv1.ListDocumentIdsResponse{Ids: page, Total: total, Revs: revs, UnreadIds: unread}, nil
}

func (s *docStore) DownloadFile(req *documentv1.DownloadFileRequest, stream grpc.ServerStreamingServer[documentv1.DownloadFileResponse]) error {
	s.downs.Add(1)
	if s.failDownloads.Load() {
		return status.Error(codes.Unavailable, "blob store down")
	}
	s.mu.Lock()
	d, ok := s.docs[req.GetDocId()]
	s.mu.Unlock()
	if !ok || d.file == nil {
		return status.Error(codes.NotFound, "Document not found")
	}
	if err := stream.Send(&documentv1.DownloadFileResponse{Part: &documentv1.DownloadFileResponse_Header{Header: &documentv1.DownloadHeader{
		Filename: d.name, ContentType: d.mime, Size: int64(len(d.file)),
	}}}); err != nil {
		return err
	}
	for off := 0; off < len(d.file); off += 3000 {
		chunk := d.file[off:min(off+3000, len(d.file))]
		if err := stream.Send(&documentv1.DownloadFileResponse{Part: &documentv1.DownloadFileResponse_Chunk{Chunk: chunk}}); err != nil {
			return err
		}
	}
	return nil
}

// serve runs s on a loopback port for the test and returns a client.
func (s *docStore) serve(t testing.TB) documentv1.DocumentServiceClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	documentv1.RegisterDocumentServiceServer(srv, s)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return documentv1.NewDocumentServiceClient(conn)
}

// recEngine is the real embedded engine (on disk in a test directory),
// recording what was written so tests can inspect documents the engine
// interface does not return (content, vectors).
type recEngine struct {
	engine.Engine
	dir    string
	mu     sync.Mutex
	docs   map[int64]engine.Document
	writes int
}

func openRecEngine(t testing.TB, dir string) *recEngine {
	t.Helper()
	e, err := bleveengine.Open(dir, bleveengine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return &recEngine{Engine: e, dir: dir, docs: map[int64]engine.Document{}}
}

func newMemEngine(t testing.TB) *recEngine { return openRecEngine(t, t.TempDir()) }

// Upsert and SetContentVectors hold mu across the engine's write and its
// record, and get holds it across Revision and the record: otherwise get
// could see the engine's new revision before the record of it (a writer
// preempted between the two, as on a loaded machine) and answer a
// document without content.
func (m *recEngine) Upsert(ctx context.Context, docs []engine.Document) (engine.WriteResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.Engine.Upsert(ctx, docs)
	if err != nil {
		return r, err
	}
	m.writes += r.Written
	for _, d := range docs {
		if old, ok := m.docs[d.ID]; !ok || d.Rev > old.Rev || d.Rev == old.Rev && d.Reread {
			m.docs[d.ID] = d
		}
	}
	return r, nil
}

// PendingVectors and SetContentVectors pass the vector stage through
// (engine.VectorStage), keeping the written vectors for get.
func (m *recEngine) PendingVectors(ctx context.Context, limit int) ([]engine.Document, int, error) {
	return m.Engine.(engine.VectorStage).PendingVectors(ctx, limit)
}

func (m *recEngine) SetContentVectors(ctx context.Context, docs []engine.Document) (engine.WriteResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.Engine.(engine.VectorStage).SetContentVectors(ctx, docs)
	if err != nil {
		return r, err
	}
	for _, d := range docs {
		if old, ok := m.docs[d.ID]; ok && old.Rev == d.Rev && old.VectorsPending {
			old.ContentVectors, old.VectorsPending = d.ContentVectors, false
			m.docs[d.ID] = old
		}
	}
	return r, nil
}

// get returns the document as last written, if the engine holds it.
func (m *recEngine) get(id int64) (engine.Document, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rev, ok, err := m.Revision(context.Background(), id)
	if err != nil || !ok {
		return engine.Document{}, false
	}
	d, have := m.docs[id]
	if !have || d.Rev != rev {
		// Written by another engine instance over the same directory:
		// only the revision is known.
		return engine.Document{ID: id, Rev: rev}, true
	}
	return d, true
}

func newTestIndexer(t testing.TB, eng engine.Engine, src Source, mod func(*Options)) *Indexer {
	t.Helper()
	emb, err := embed.NewHash(64)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Engine: eng, Source: src, Embedder: emb, TempDir: t.TempDir()}
	if mod != nil {
		mod(&o)
	}
	ix, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// newOCRQueue is an OCR job queue and text cache in a fresh database.
func newOCRQueue(t testing.TB) *ocrjobs.Store {
	t.Helper()
	pool := pgtest.NewPool(t, "indexing_test", ocrjobs.Migrations("indexing_test"))
	return ocrjobs.New(pool, "indexer")
}

// runOCRStage runs ix's OCR stage until the test ends.
func runOCRStage(t testing.TB, ix *Indexer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ix.RunOCRStage(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func textDoc(rev int64, text string) *storedDoc {
	return &storedDoc{rev: rev, desc: fmt.Sprintf("doc rev %d", rev), docType: "memo", groups: []int64{1}, folders: []int64{7}, file: []byte(text), mime: "text/plain", name: "a.txt"}
}

// oneByOne answers GetIndexDocuments through get, one document at a time
// and without inline files, for test sources that intercept
// GetIndexDocument; an error of any document fails the batch, as a failed
// batch call does.
func oneByOne(ctx context.Context, req *documentv1.GetIndexDocumentsRequest,
	get func(context.Context, *documentv1.GetIndexDocumentRequest, ...grpc.CallOption) (*documentv1.GetIndexDocumentResponse, error),
) (*documentv1.GetIndexDocumentsResponse, error) {
	out := &documentv1.GetIndexDocumentsResponse{}
	for _, id := range req.GetDocIds() {
		r, err := get(ctx, &documentv1.GetIndexDocumentRequest{DocId: id})
		if err != nil {
			return nil, err
		}
		out.Documents = append(out.Documents, r)
	}
	return out, nil
}
