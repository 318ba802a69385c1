package searchsvc

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/search/bleveengine"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// A re-embedding's first rebuild continues the generation a killed
// process left only when it records the same embedder identity; one of
// another identity (or none) is removed and a new generation begun.
func TestEmbeddedRebuildResumesOnlyTheSameIdentity(t *testing.T) {
	use := embed.Identity{Kind: "use", Model: "use-lite", Version: "v3", Dimensions: 4}
	other := embed.Identity{Kind: "use", Model: "use-lite", Version: "v2", Dimensions: 4}
	for _, tc := range []struct {
		name     string
		recorded *embed.Identity
		resumed  bool
	}{
		{name: "same identity", recorded: &use, resumed: true},
		{name: "another identity", recorded: &other, resumed: false},
		{name: "none recorded", recorded: nil, resumed: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			root := t.TempDir()
			cur, gen, err := bleveengine.OpenCurrent(root, bleveengine.Options{})
			if err != nil {
				t.Fatal(err)
			}
			left, _, err := bleveengine.NewGeneration(root, bleveengine.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.recorded != nil {
				if err := left.SetEmbedder(ctx, *tc.recorded); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := left.Upsert(ctx, []engine.Document{{ID: 7, Rev: 2, Content: "numbat", ContentVectors: [][]float32{{1, 0, 0, 0}}}}); err != nil {
				t.Fatal(err)
			}
			left.Close()
			cur.Close()

			// The restart: the unfinished generation is kept for the
			// re-embedding to decide.
			cur, gen, unfinished, err := bleveengine.OpenCurrentResumable(root, bleveengine.Options{})
			if err != nil || unfinished == "" {
				t.Fatalf("OpenCurrentResumable: unfinished %q, %v", unfinished, err)
			}
			sw := engine.NewSwitchable(cur)
			defer sw.Close()
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			target, err := embeddedRebuild(root, bleveengine.Options{}, sw, &gen, unfinished, use, log)(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer target.Abandon()
			n, _ := target.Engine().Count(ctx)
			rev, have, _ := target.Engine().Revision(ctx, 7)
			resumed := n == 1 && have && rev == 2
			if resumed != tc.resumed {
				t.Fatalf("resumed %v (%d documents, document 7 rev %d %v), want %v", resumed, n, rev, have, tc.resumed)
			}
			// Not resumed, the removed generation's number is free again:
			// the new one is empty under it (counted above).
			if name := target.(*generationTarget).name; name != unfinished {
				t.Errorf("the target is %s, want %s (resumed, or new in its place)", name, unfinished)
			}
		})
	}
}
