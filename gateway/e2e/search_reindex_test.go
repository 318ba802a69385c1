package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/docrepo/docrepo/pkg/auth"
	indexerv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/indexer/v1"
	searchv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/search/v1"
	"github.com/docrepo/docrepo/pkg/grpcclient"
)

// TestSearchReindex runs a second search service that consumes no events:
// its index is empty until IndexerService.Reindex (served on the search
// service's own port in embedded mode) rebuilds it from the document
// service. The progress stream ends finished with every document done.
func TestSearchReindex(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	a := u.uploadText("r1.txt", "reindexed quokka text")
	b := u.uploadText("r2.txt", "another quokka document")
	u.waitIndexed(a, b) // committed and visible to the main stack

	env, err := searchEnv(context.Background(), stk)
	if err != nil {
		t.Fatal(err)
	}
	addr := startExtra(t, "search", append(env,
		"OPENSEARCH_URL=",
		"NATS_URL=")...) // no events: only reindex writes this index
	conn, err := grpcclient.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	search := func() *searchv1.SearchResponse {
		t.Helper()
		where, _ := structpb.NewStruct(map[string]any{"fts": map[string]any{"query": "quokka"}})
		c := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+u.token)
		resp, err := searchv1.NewSearchServiceClient(conn).Search(c, &searchv1.SearchRequest{Where: where})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	admin := newService(t, auth.ScopeAdmin)
	actx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+admin.token)
	var stream interface {
		Recv() (*indexerv1.ReindexResponse, error)
	}
	eventually(t, 30*time.Second, func() error {
		s, err := indexerv1.NewIndexerServiceClient(conn).Reindex(actx, &indexerv1.ReindexRequest{Recreate: true})
		if err == nil {
			var first *indexerv1.ReindexResponse
			if first, err = s.Recv(); err == nil {
				stream = &prepended{first: first, rest: s}
				return nil
			}
		}
		if status.Code(err) == codes.Unavailable {
			return err // still starting
		}
		t.Fatalf("reindex: %v", err)
		return nil
	})
	var last *indexerv1.ReindexResponse
	for {
		p, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if last != nil && p.GetDone() < last.GetDone() {
			t.Fatalf("progress went backwards: %v then %v", last, p)
		}
		last = p
	}
	if last == nil || !last.GetFinished() || last.GetFailed() != 0 || last.GetDone() != last.GetTotal() || last.GetDone() < 2 {
		t.Fatalf("last progress = %v, want finished, every document done, none failed", last)
	}
	resp := search()
	if resp.GetTotal() != 2 {
		t.Fatalf("after reindex the second index finds %d quokka documents, want 2", resp.GetTotal())
	}

	// The reindex scope is admin: a search key cannot start one.
	sctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+u.token)
	s, err := indexerv1.NewIndexerServiceClient(conn).Reindex(sctx, &indexerv1.ReindexRequest{})
	if err == nil {
		_, err = s.Recv()
	}
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("reindex with a search key: %v, want PermissionDenied", err)
	}
}

// prepended is a stream whose first message was already read.
type prepended struct {
	first *indexerv1.ReindexResponse
	rest  interface {
		Recv() (*indexerv1.ReindexResponse, error)
	}
}

func (p *prepended) Recv() (*indexerv1.ReindexResponse, error) {
	if p.first != nil {
		f := p.first
		p.first = nil
		return f, nil
	}
	return p.rest.Recv()
}

// TestVerifyRepairsALostEvent: a document written without its event (as if
// the event were lost) is never indexed by the consumer; the anti-entropy
// pass (reindex -verify, which also runs at start-up and every
// DOCREPO_INDEX_VERIFY_INTERVAL) finds it missing and indexes it, without
// a rebuild. A document whose file the document service records as not
// read (as when every download failed and the indexer wrote it without its
// text) is read again at the revision the index holds.
func TestVerifyRepairsALostEvent(t *testing.T) {
	u := newDocUser(t)
	kept := u.uploadText("kept.txt", "numbat with its event", field("description", "numbat with its event"))
	u.waitIndexed(kept)
	eventually(t, indexWait, func() error {
		if d := u.getDoc(kept, ""); d.ContentSource == nil || *d.ContentSource != "text" {
			return fmt.Errorf("content_source %v, want text", d.ContentSource)
		}
		return nil
	})
	if _, err := stk.pool.Exec(context.Background(), `UPDATE document.linked_files SET content_source = NULL WHERE doc_id = $1`, kept); err != nil {
		t.Fatal(err)
	}
	// A document row with no outbox row: its event is "lost". Only a
	// verify pass indexes it; one may run meanwhile on its own (a start-up
	// pass that failed is retried with back-off), which the check below
	// tells from the consumer indexing it.
	verifyPasses := func() int {
		return len(logs.records(map[string]string{"service": "search", "msg": "verify: index compared with the documents of record"}))
	}
	passesBefore := verifyPasses()
	var lost int64
	if err := stk.pool.QueryRow(context.Background(), `WITH d AS (
			INSERT INTO document.documents (description, entry_person_id, entry_person) VALUES ('numbat without an event', 1, 'x')
			RETURNING id)
		INSERT INTO document.document_groups (doc_id, group_id)
		SELECT d.id, g.id FROM d, identity.groups g WHERE g.name = $1 RETURNING doc_id`, u.group).Scan(&lost); err != nil {
		t.Fatal(err)
	}
	byDescription := map[string]any{"where": map[string]any{"contains": map[string]any{"field": "description", "value": "numbat"}}}
	time.Sleep(time.Second) // give a (non-existent) event every chance
	if r := u.searchOK(byDescription); r.Total != 1 {
		if verifyPasses() == passesBefore {
			t.Fatalf("before verify: %d numbat documents, want only the one with an event", r.Total)
		}
		t.Logf("a scheduled verify pass ran meanwhile and indexed the document without an event (%d found)", r.Total)
	}

	admin := newService(t, auth.ScopeAdmin)
	conn, err := grpcclient.Dial(stk.addrs["search"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	actx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+admin.token)
	stream, err := indexerv1.NewIndexerServiceClient(conn).Reindex(actx, &indexerv1.ReindexRequest{Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	var last *indexerv1.ReindexResponse
	for {
		p, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		last = p
	}
	if last == nil || !last.GetFinished() || last.GetFailed() != 0 {
		t.Fatalf("verify progress = %v, want finished without failures", last)
	}
	if last.GetMissing() < 1 || last.GetUnread() < 1 {
		// A scheduled pass may have run before or beside this one and
		// repaired either document first: then the passes together, as
		// their log lines count them, must have repaired both.
		eventually(t, 10*time.Second, func() error {
			var missing, unread float64
			recs := logs.records(map[string]string{"service": "search", "msg": "verify: index compared with the documents of record"})
			for _, r := range recs[passesBefore:] {
				m, _ := r["missing"].(float64)
				u, _ := r["unread"].(float64)
				missing, unread = missing+m, unread+u
			}
			if missing < 1 || unread < 1 {
				return fmt.Errorf("verify progress = %v and %d passes since the lost document repaired %v missing and %v unread, want both ≥ 1",
					last, len(recs)-passesBefore, missing, unread)
			}
			return nil
		})
	}
	if r := u.searchOK(byDescription); r.Total != 2 {
		t.Fatalf("after verify: %d numbat documents, want 2 (ids %v, lost %d)", r.Total, r.IDs(), lost)
	}
	if d := u.getDoc(kept, ""); d.ContentSource == nil || *d.ContentSource != "text" {
		t.Fatalf("after verify: content_source %v, want text (the file read again)", d.ContentSource)
	}
	if r := u.searchOK(map[string]any{"where": fts("numbat")}); !slices.Contains(r.IDs(), kept) {
		t.Fatalf("after verify: the reread document is not found by its text (ids %v)", r.IDs())
	}
}
