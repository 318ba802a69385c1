package bleveengine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

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
