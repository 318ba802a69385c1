package bleveengine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// An index made before generations keeps working as generation "."; a
// committed rebuild replaces it for good (CURRENT names the new one, a
// restart opens it, the old files go); an unfinished rebuild is dropped at
// the next start.
func TestGenerationsReplaceTheLegacyIndexAndDropUnfinishedRebuilds(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	legacy, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := legacy.Upsert(ctx, []engine.Document{{ID: 1, Rev: 1, Description: ptrTo("legacy")}}); err != nil {
		t.Fatal(err)
	}
	legacy.Close()

	e, gen, err := OpenCurrent(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := e.Count(ctx); gen != "." || n != 1 {
		t.Fatalf("legacy index opened as %q with %d documents", gen, n)
	}
	next, name, err := NewGeneration(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if name != "gen-1" {
		t.Fatalf("new generation %q", name)
	}
	if _, err := next.Upsert(ctx, []engine.Document{{ID: 1, Rev: 2}, {ID: 2, Rev: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := CommitGeneration(root, name); err != nil {
		t.Fatal(err)
	}
	e.Close()
	if err := RemoveGeneration(root, "."); err != nil {
		t.Fatal(err)
	}
	next.Close()
	if got := entries(t, root); !slices.Equal(got, []string{"CURRENT", "gen-1"}) {
		t.Fatalf("after the switch the index directory holds %v", got)
	}

	// An unfinished rebuild, then a restart.
	abandoned, _, err := NewGeneration(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	abandoned.Close()
	again, gen, err := OpenCurrent(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if n, _ := again.Count(ctx); gen != "gen-1" || n != 2 {
		t.Fatalf("after a restart: generation %q with %d documents, want gen-1 with 2", gen, n)
	}
	if _, err := os.Stat(filepath.Join(root, "gen-2")); !os.IsNotExist(err) {
		t.Fatalf("the unfinished generation is still there (%v)", err)
	}
}

func ptrTo(s string) *string { return &s }

// A rebuild left unfinished can be continued: OpenCurrentResumable keeps
// the newest unfinished generation (with what it durably holds: documents,
// vectors, the recorded embedder) and drops older ones; OpenCurrent drops
// them all.
func TestUnfinishedGenerationIsKeptForResumption(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	cur, gen, err := OpenCurrent(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Close()
	for range 2 { // gen-2, an older unfinished one, then gen-3
		e, _, err := NewGeneration(root, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.SetEmbedder(ctx, embed.Identity{Kind: "use", Model: "use-lite", Dimensions: 4}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Upsert(ctx, []engine.Document{{ID: 1, Rev: 1, Content: "x", ContentVectors: [][]float32{{1, 0, 0, 0}}}, {ID: 2, Rev: 3, Content: "y", VectorsPending: true}}); err != nil {
			t.Fatal(err)
		}
		e.Close()
	}

	e, name, unfinished, err := OpenCurrentResumable(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	if name != gen || unfinished != "gen-3" {
		t.Fatalf("OpenCurrentResumable: current %q, unfinished %q; want %q and gen-3", name, unfinished, gen)
	}
	if got := entries(t, root); !slices.Equal(got, []string{"CURRENT", gen, "gen-3"}) {
		t.Fatalf("index directory holds %v, want the current and the newest unfinished generation", got)
	}
	r, err := ResumeGeneration(root, unfinished, Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, ok, _ := r.Embedder(ctx)
	n, _ := r.Count(ctx)
	_, pending, _ := r.PendingVectors(ctx, 0)
	rev, have, _ := r.Revision(ctx, 2)
	r.Close()
	if !ok || id.Kind != "use" || n != 2 || pending != 1 || !have || rev != 3 {
		t.Fatalf("resumed generation: embedder %v (%v), %d documents, %d pending, doc 2 rev %d (%v); want use, 2, 1, 3", id, ok, n, pending, rev, have)
	}

	again, _, err := OpenCurrent(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
	if got := entries(t, root); !slices.Equal(got, []string{"CURRENT", gen}) {
		t.Fatalf("after OpenCurrent the index directory holds %v, want only the current generation", got)
	}
}
