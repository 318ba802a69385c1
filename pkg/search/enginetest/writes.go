package enginetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

func doc(id, rev int64, content string) engine.Document {
	return engine.Document{ID: id, Rev: rev, GroupIDs: []int64{1}, Content: content, DocType: ptr(content)}
}

func testWrites(t *testing.T, newEngine func(t *testing.T) engine.Engine) {
	ctx := context.Background()
	upsert := func(t *testing.T, e engine.Engine, want engine.WriteResult, docs ...engine.Document) {
		t.Helper()
		got, err := e.Upsert(ctx, docs)
		if err != nil {
			t.Fatalf("Upsert: %v", err)
		}
		if got != want {
			t.Errorf("Upsert = %+v, want %+v", got, want)
		}
	}
	del := func(t *testing.T, e engine.Engine, id, rev int64) {
		t.Helper()
		if err := e.Delete(ctx, id, rev); err != nil {
			t.Fatalf("Delete(%d, %d): %v", id, rev, err)
		}
	}
	// state checks what the engine holds of id: its revision and the
	// content (the word searched), or that it is absent.
	state := func(t *testing.T, e engine.Engine, id, rev int64, word string) {
		t.Helper()
		got, ok, err := e.Revision(ctx, id)
		if err != nil {
			t.Fatalf("Revision: %v", err)
		}
		if rev == 0 {
			if ok {
				t.Errorf("Revision(%d) = %d, want absent", id, got)
			}
		} else if !ok || got != rev {
			t.Errorf("Revision(%d) = %d, %v, want %d", id, got, ok, rev)
		}
		res := search(t, e, body(eq("eq", "id", fmt.Sprint(id)), `"select": ["doc_type"]`), admin)
		if word == "" {
			if len(res.Hits) != 0 {
				t.Errorf("document found: %+v", res.Hits)
			}
			return
		}
		if len(res.Hits) != 1 || res.Hits[0].Fields["doc_type"] != word {
			t.Errorf("hits = %+v, want doc_type %q", res.Hits, word)
		}
		if fts := search(t, e, body(ftsWhere(word)), admin); len(fts.Hits) != 1 {
			t.Errorf("fts %q: hits %v, want the document", word, ids(fts))
		}
	}
	count := func(t *testing.T, e engine.Engine, want int64) {
		t.Helper()
		n, err := e.Count(ctx)
		if err != nil || n != want {
			t.Errorf("Count = %d, %v, want %d", n, err, want)
		}
	}

	t.Run("newer revisions win", func(t *testing.T) {
		e := newEngine(t)
		upsert(t, e, engine.WriteResult{Written: 1}, doc(1, 2, "two"))
		state(t, e, 1, 2, "two")
		upsert(t, e, engine.WriteResult{Stale: 1}, doc(1, 1, "one"))
		upsert(t, e, engine.WriteResult{Stale: 1}, doc(1, 2, "again"))
		state(t, e, 1, 2, "two")
		upsert(t, e, engine.WriteResult{Written: 1}, doc(1, 3, "three"))
		state(t, e, 1, 3, "three")
		// A reread of the same revision (its text could not be read
		// before) replaces it; of an older one never.
		again := doc(1, 3, "reread")
		again.Reread = true
		upsert(t, e, engine.WriteResult{Written: 1}, again)
		state(t, e, 1, 3, "reread")
		older := doc(1, 2, "older")
		older.Reread = true
		upsert(t, e, engine.WriteResult{Stale: 1}, older)
		state(t, e, 1, 3, "reread")
		if res := search(t, e, body(ftsWhere("two")), admin); len(res.Hits) != 0 {
			t.Errorf("old content still found: %v", ids(res))
		}
		count(t, e, 1)
	})
	t.Run("newest of one batch wins", func(t *testing.T) {
		e := newEngine(t)
		// Whether the superseded rev 2 counts as written or stale is the
		// engine's choice; rev 3, older than rev 4 before it, is stale.
		got, err := e.Upsert(ctx, []engine.Document{doc(1, 2, "two"), doc(1, 4, "four"), doc(2, 1, "other"), doc(1, 3, "three")})
		if err != nil {
			t.Fatalf("Upsert: %v", err)
		}
		if got.Written+got.Stale != 4 || got.Written < 2 || got.Stale < 1 {
			t.Errorf("Upsert = %+v, want 2 or 3 written and the rest stale", got)
		}
		state(t, e, 1, 4, "four")
		count(t, e, 2)
	})
	t.Run("delete leaves a tombstone", func(t *testing.T) {
		e := newEngine(t)
		upsert(t, e, engine.WriteResult{Written: 2}, doc(1, 3, "three"), doc(2, 1, "other"))
		del(t, e, 1, 5)
		state(t, e, 1, 0, "")
		count(t, e, 1)
		upsert(t, e, engine.WriteResult{Stale: 1}, doc(1, 4, "four"))
		upsert(t, e, engine.WriteResult{Stale: 1}, doc(1, 5, "five"))
		state(t, e, 1, 0, "")
		upsert(t, e, engine.WriteResult{Written: 1}, doc(1, 6, "six"))
		state(t, e, 1, 6, "six")
		count(t, e, 2)
	})
	t.Run("delete of an older revision is ignored", func(t *testing.T) {
		e := newEngine(t)
		upsert(t, e, engine.WriteResult{Written: 1}, doc(1, 7, "seven"))
		del(t, e, 1, 6)
		state(t, e, 1, 7, "seven")
		del(t, e, 1, 7)
		state(t, e, 1, 0, "")
	})
	t.Run("delete of an absent document", func(t *testing.T) {
		e := newEngine(t)
		del(t, e, 1, 3)
		state(t, e, 1, 0, "")
		upsert(t, e, engine.WriteResult{Stale: 1}, doc(1, 2, "two"))
		state(t, e, 1, 0, "")
		upsert(t, e, engine.WriteResult{Written: 1}, doc(1, 4, "four"))
		state(t, e, 1, 4, "four")
		del(t, e, 1, 4)
		del(t, e, 1, 4)
		state(t, e, 1, 0, "")
		count(t, e, 0)
	})
	t.Run("reset", func(t *testing.T) {
		e := newEngine(t)
		upsert(t, e, engine.WriteResult{Written: 2}, doc(1, 3, "three"), doc(2, 1, "other"))
		del(t, e, 2, 5)
		if err := e.Reset(ctx); err != nil {
			t.Fatalf("Reset: %v", err)
		}
		count(t, e, 0)
		state(t, e, 1, 0, "")
		// The tombstone is gone too.
		upsert(t, e, engine.WriteResult{Written: 2}, doc(1, 1, "one"), doc(2, 1, "other"))
		state(t, e, 1, 1, "one")
		count(t, e, 2)
	})
	t.Run("metadata update without content change", func(t *testing.T) {
		e := newEngine(t)
		d := doc(1, 1, "one")
		d.FolderIDs = []int64{5}
		upsert(t, e, engine.WriteResult{Written: 1}, d)
		d.Rev, d.FolderIDs = 2, []int64{6}
		upsert(t, e, engine.WriteResult{Written: 1}, d)
		wantSet(t, search(t, e, body(eq("eq", "filesbelongto", "5")), admin), nil)
		wantSet(t, search(t, e, body(eq("eq", "filesbelongto", "6")), admin), []int64{1})
	})
}

func testErrors(t *testing.T, newEngine func(t *testing.T) engine.Engine) {
	t.Run("deadline", func(t *testing.T) {
		e := load(t, newEngine, ftsDocs)
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		_, err := e.Search(ctx, request(t, body(ftsWhere("fox")), admin))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Search with an expired deadline: %v, want context.DeadlineExceeded", err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		e := newEngine(t)
		if err := e.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if _, err := e.Search(context.Background(), request(t, `{}`, admin)); !errors.Is(err, engine.ErrClosed) {
			t.Errorf("Search after Close: %v, want ErrClosed", err)
		}
		if _, err := e.Upsert(context.Background(), []engine.Document{doc(1, 1, "x")}); !errors.Is(err, engine.ErrClosed) {
			t.Errorf("Upsert after Close: %v, want ErrClosed", err)
		}
	})
}

// testRevisions: Revisions lists every live document with its stored
// revision, and leaves deleted ones out (the anti-entropy pass relies on
// it to find what the index lacks or holds too much of).
func testRevisions(t *testing.T, newEngine func(t *testing.T) engine.Engine) {
	ctx := context.Background()
	e := newEngine(t)
	empty, err := e.Revisions(ctx)
	if err != nil || len(empty) != 0 {
		t.Fatalf("Revisions of an empty engine = %v, %v", empty, err)
	}
	if _, err := e.Upsert(ctx, []engine.Document{doc(1, 3, "one"), doc(2, 1, "two"), doc(5, 7, "five")}); err != nil {
		t.Fatal(err)
	}
	if err := e.Delete(ctx, 2, 2); err != nil {
		t.Fatal(err)
	}
	got, err := e.Revisions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]int64{1: 3, 5: 7}
	if len(got) != len(want) || got[1] != 3 || got[5] != 7 {
		t.Fatalf("Revisions = %v, want %v", got, want)
	}
}
