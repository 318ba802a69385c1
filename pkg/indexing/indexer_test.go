package indexing

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

func TestIndexDocument(t *testing.T) {
	big := strings.Repeat("lorem ipsum ", 2000)
	tests := []struct {
		name        string
		doc         *storedDoc
		opts        func(*Options)
		wantContent string // substring; "" means the content must be empty
		wantErr     bool   // ContentErr expected
	}{
		{name: "plain text", doc: textDoc(3, "The quarterly report on vaccination."), wantContent: "quarterly report on vaccination"},
		{name: "html is extracted", doc: &storedDoc{rev: 1, groups: []int64{1}, file: []byte("<html><body><p>Hello <b>world</b></p><script>evil()</script></body></html>"), mime: "text/html", name: "x.html"}, wantContent: "Hello world"},
		{name: "malformed pdf is indexed without content", doc: &storedDoc{rev: 1, groups: []int64{1}, file: []byte("%PDF-1.7\n1 0 obj garbage"), mime: "application/pdf", name: "x.pdf"}, wantErr: true},
		{name: "file over the limit is indexed without content", doc: textDoc(2, big), opts: func(o *Options) { o.MaxFileBytes = 1000 }, wantErr: true},
		{name: "no file", doc: &storedDoc{rev: 4, desc: "no file here", groups: []int64{2}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := newDocStore()
			store.put(42, tc.doc)
			eng := newMemEngine(t)
			ix := newTestIndexer(t, eng, store.serve(t), tc.opts)
			res := ix.Index(context.Background(), []Item{{ID: 42}})
			if res[0].Outcome != Written {
				t.Fatalf("outcome = %v (%v), want written", res[0].Outcome, res[0].Err)
			}
			if (res[0].ContentErr != nil) != tc.wantErr {
				t.Fatalf("ContentErr = %v, want error %v", res[0].ContentErr, tc.wantErr)
			}
			got, ok := eng.get(42)
			if !ok {
				t.Fatal("document not in the engine")
			}
			if got.Rev != tc.doc.rev {
				t.Errorf("rev = %d, want %d", got.Rev, tc.doc.rev)
			}
			if tc.wantContent == "" && got.Content != "" {
				t.Errorf("content = %q, want empty", got.Content)
			}
			if tc.wantContent != "" && !strings.Contains(got.Content, tc.wantContent) {
				t.Errorf("content = %q, want it to contain %q", got.Content, tc.wantContent)
			}
			if strings.Contains(got.Content, "evil") {
				t.Errorf("script text indexed: %q", got.Content)
			}
			if (got.ContentVectors != nil) != (got.Content != "") {
				t.Errorf("content vectors present = %v with content %q", got.ContentVectors != nil, got.Content)
			}
			if engine.MetadataText(&got) != "" && len(got.MetadataVector) != 64 {
				t.Errorf("metadata vector has %d dimensions, want 64", len(got.MetadataVector))
			}
			if len(got.GroupIDs) == 0 || got.GroupIDs[0] != tc.doc.groups[0] {
				t.Errorf("groups = %v, want %v", got.GroupIDs, tc.doc.groups)
			}
			if got.EntryPerson == nil || *got.EntryPerson != "alice" || got.EntryDate == nil || !got.EntryDate.Equal(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)) {
				t.Errorf("entry person/date not mapped: %v %v", got.EntryPerson, got.EntryDate)
			}
		})
	}
}

func TestIndexSkipsWhatTheEngineHolds(t *testing.T) {
	store := newDocStore()
	store.put(1, textDoc(5, "five"))
	eng := newMemEngine(t)
	ix := newTestIndexer(t, eng, store.serve(t), nil)
	ctx := context.Background()
	if r := ix.Index(ctx, []Item{{ID: 1, Rev: 5}}); r[0].Outcome != Written {
		t.Fatalf("first index: %v %v", r[0].Outcome, r[0].Err)
	}
	gets, downs := store.gets.Load(), store.downs.Load()
	tests := []struct {
		name     string
		item     Item
		want     Outcome
		wantGets int64 // GetIndexDocument calls expected
	}{
		{name: "event of the stored rev: no load at all", item: Item{ID: 1, Rev: 5}, want: Current, wantGets: 0},
		{name: "older event: no load at all", item: Item{ID: 1, Rev: 3}, want: Current, wantGets: 0},
		{name: "unknown rev: load, then nothing to write", item: Item{ID: 1}, want: Current, wantGets: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ix.Index(ctx, []Item{tc.item})
			if r[0].Outcome != tc.want {
				t.Fatalf("outcome = %v, want %v", r[0].Outcome, tc.want)
			}
			if g := store.gets.Load() - gets; g != tc.wantGets {
				t.Errorf("GetIndexDocument calls = %d, want %d", g, tc.wantGets)
			}
			gets = store.gets.Load()
			if store.downs.Load() != downs {
				t.Errorf("the file was downloaded again")
			}
		})
	}
}

func TestIndexDeletesGoneDocuments(t *testing.T) {
	store := newDocStore()
	store.put(9, textDoc(2, "soon gone"))
	eng := newMemEngine(t)
	ix := newTestIndexer(t, eng, store.serve(t), nil)
	ctx := context.Background()
	ix.Index(ctx, []Item{{ID: 9}})
	if n, _ := eng.Count(ctx); n != 1 {
		t.Fatalf("count = %d, want 1", n)
	}
	store.remove(9)
	if r := ix.Index(ctx, []Item{{ID: 9, Rev: 3}}); r[0].Outcome != Deleted {
		t.Fatalf("outcome = %v (%v), want deleted", r[0].Outcome, r[0].Err)
	}
	if n, _ := eng.Count(ctx); n != 0 {
		t.Fatalf("count = %d after delete, want 0", n)
	}
}

func TestIndexTransientFailures(t *testing.T) {
	store := newDocStore()
	store.put(1, textDoc(1, "alpha beta"))
	eng := newMemEngine(t)
	ix := newTestIndexer(t, eng, store.serve(t), nil)
	ctx := context.Background()

	store.failGets.Store(true)
	if r := ix.Index(ctx, []Item{{ID: 1, Rev: 1}}); r[0].Outcome != Failed || !transient(r[0].Err) {
		t.Fatalf("document service down: outcome %v err %v, want a transient failure", r[0].Outcome, r[0].Err)
	}
	store.failGets.Store(false)

	store.failDownloads.Store(true)
	if r := ix.Index(ctx, []Item{{ID: 1, Rev: 1}}); r[0].Outcome != Failed {
		t.Fatalf("blob store down: outcome %v, want failed (retry later, not content-less)", r[0].Outcome)
	}
	if n, _ := eng.Count(ctx); n != 0 {
		t.Fatalf("a failed document was written")
	}
	r := ix.Index(ctx, []Item{{ID: 1, Rev: 1, DegradeContent: true}})
	if r[0].Outcome != Written || r[0].ContentErr == nil {
		t.Fatalf("last attempt: outcome %v content error %v, want written without content", r[0].Outcome, r[0].ContentErr)
	}
	store.failDownloads.Store(false)
	store.put(1, textDoc(2, "alpha beta"))
	if r := ix.Index(ctx, []Item{{ID: 1, Rev: 2}}); r[0].Outcome != Written {
		t.Fatalf("after recovery: %v %v", r[0].Outcome, r[0].Err)
	}
	if d, _ := eng.get(1); d.Content != "alpha beta\n" && d.Content != "alpha beta" {
		t.Fatalf("content after recovery = %q", d.Content)
	}
}

func TestReindex(t *testing.T) {
	store := newDocStore()
	const n = 1300 // more than two ListDocumentIds pages
	for i := int64(1); i <= n; i++ {
		store.put(i, textDoc(i%7+1, "document number text"))
	}
	eng := newMemEngine(t)
	ix := newTestIndexer(t, eng, store.serve(t), nil)
	ctx := context.Background()
	// A stale document that no longer exists: recreate drops it.
	if _, err := eng.Upsert(ctx, []engine.Document{{ID: 99999, Rev: 1}}); err != nil {
		t.Fatal(err)
	}
	var reports []Progress
	p, err := ix.Reindex(ctx, true, func(p Progress) error { reports = append(reports, p); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !p.Finished || p.Done != n || p.Total != n || p.Failed != 0 {
		t.Fatalf("progress = %+v, want %d done of %d, finished", p, n, n)
	}
	for _, r := range reports {
		if r.Total != n { // the first page's total, kept for the whole pass
			t.Fatalf("a report gave %d of %d documents as the total, want %d", r.Done, r.Total, n)
		}
	}
	if len(reports) == 0 || !reports[len(reports)-1].Finished {
		t.Fatalf("last report is not finished: %+v", reports)
	}
	for i := 1; i < len(reports); i++ {
		if reports[i].Done < reports[i-1].Done {
			t.Fatalf("progress went backwards: %+v then %+v", reports[i-1], reports[i])
		}
	}
	if c, _ := eng.Count(ctx); c != n {
		t.Fatalf("count = %d, want %d", c, n)
	}
	for i := int64(1); i <= n; i++ {
		if d, ok := eng.get(i); !ok || d.Rev != i%7+1 {
			t.Fatalf("doc %d: present %v rev %d, want rev %d", i, ok, d.Rev, i%7+1)
		}
	}
	// Without recreate, a second run finds everything current.
	writes := eng.writes
	if _, err := ix.Reindex(ctx, false, nil); err != nil {
		t.Fatal(err)
	}
	if eng.writes != writes {
		t.Fatalf("a reindex of an up-to-date engine wrote %d documents", eng.writes-writes)
	}
}

// TestIndexLoadsABatchInOneCall: the documents of a batch are loaded with
// one GetIndexDocuments call, small files inline (no download), and their
// content sources recorded in one call; a document service without the
// batch calls (an older version) gets a call per document and a download
// per file, with the same result.
func TestIndexLoadsABatchInOneCall(t *testing.T) {
	tests := []struct {
		name          string
		noBatch       bool
		wantBatchGets int64
		wantDownloads int64
	}{
		{name: "batch calls", wantBatchGets: 1, wantDownloads: 1},
		{name: "older document service", noBatch: true, wantBatchGets: 0, wantDownloads: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newDocStore()
			store.noBatch.Store(tt.noBatch)
			for id := int64(1); id <= 4; id++ {
				store.put(id, textDoc(1, fmt.Sprintf("small document %d", id)))
			}
			big := textDoc(1, "a file over the inline limit")
			big.declared = InlineMaxBytes + 1
			big.file = []byte(strings.Repeat("x", InlineMaxBytes) + " a file over the inline limit")
			store.put(5, big)
			eng := newMemEngine(t)
			ix := newTestIndexer(t, eng, store.serve(t), nil)
			items := []Item{{ID: 1, Rev: 1}, {ID: 2, Rev: 1}, {ID: 3, Rev: 1}, {ID: 4, Rev: 1}, {ID: 5, Rev: 1}}
			for i, r := range ix.Index(context.Background(), items) {
				if r.Outcome != Written || r.ContentErr != nil {
					t.Fatalf("item %d: %+v", i, r)
				}
			}
			for id := int64(1); id <= 4; id++ {
				if d, _ := eng.get(id); !strings.Contains(d.Content, fmt.Sprintf("small document %d", id)) {
					t.Fatalf("doc %d content %q", id, d.Content)
				}
				if store.source(id) != "text" {
					t.Fatalf("doc %d content source %q, want text", id, store.source(id))
				}
			}
			if d, _ := eng.get(5); !strings.Contains(d.Content, "inline limit") {
				t.Fatalf("large doc content not indexed")
			}
			if got := store.batchGets.Load(); got != tt.wantBatchGets {
				t.Errorf("GetIndexDocuments calls = %d, want %d", got, tt.wantBatchGets)
			}
			if got := store.downs.Load(); got != tt.wantDownloads {
				t.Errorf("downloads = %d, want %d", got, tt.wantDownloads)
			}
		})
	}
}
