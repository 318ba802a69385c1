package bleveengine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	index "github.com/blevesearch/bleve_index_api"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// f32Bytes is v as the vector files store it.
func f32Bytes(v []float32) []byte {
	return bytes.Clone(unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*4))
}

// vectorFiles returns the contents of the engine directory's vector files.
func vectorFiles(t *testing.T, dir string) []byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, vectorsDir, "*.f32"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no vector files in %s (%v)", dir, err)
	}
	var all []byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

// TestDeleteErasesTheDocumentsVectors: a deleted (purged) document's
// content passages and metadata vector leave the vector index: no
// reference, no live vector, zeros in the full-precision store and the
// codes, and not a byte of them in the vector files, also after a reopen.
// A document whose content changed loses its old vectors the same way.
// An index whose files still hold a tombstone's vectors (a crash between
// the delete and the erasure, or an index written before erasure existed)
// is erased at open.
func TestDeleteErasesTheDocumentsVectors(t *testing.T) {
	ctx := context.Background()
	c := newANNCorpus(t, 200)
	// Document 42 gets three content passages (others' vectors, as
	// values), so several consecutive vectors are erased.
	passages := [][]float32{c.contentByID[42], c.contentByID[150], c.contentByID[151]}
	docs := slices.Clone(c.docs)
	docs[41].ContentVectors = passages
	gone := append(slices.Clone(passages), c.metadataByID[42])
	// Document 43's content changes: its first vector is replaced.
	replaced := c.contentByID[43]
	tests := []struct {
		name     string
		inMemory bool
		// crash restores the vector files from before the delete, as a
		// process killed between the tombstone's commit and the erasure
		// leaves them.
		crash bool
	}{
		{name: "in memory", inMemory: true},
		{name: "on disk"},
		{name: "on disk, crashed before the erasure", crash: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "idx")
			opts := Options{InMemory: tc.inMemory, VectorGraph: GraphAlways}
			if tc.inMemory {
				dir = ""
			}
			e, err := Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { e.Close() }()
			// Document 150 and 151 are deleted first: their values live on
			// only as document 42's passages.
			if _, err := e.Upsert(ctx, docs); err != nil {
				t.Fatal(err)
			}
			if err := e.Delete(ctx, 150, 2); err != nil {
				t.Fatal(err)
			}
			if err := e.Delete(ctx, 151, 2); err != nil {
				t.Fatal(err)
			}
			var saved map[string][]byte
			if tc.crash {
				if err := e.Close(); err != nil {
					t.Fatal(err)
				}
				saved = map[string][]byte{}
				paths, _ := filepath.Glob(filepath.Join(dir, vectorsDir, "*.f32"))
				for _, p := range paths {
					saved[p], _ = os.ReadFile(p)
				}
				if e, err = Open(dir, opts); err != nil {
					t.Fatal(err)
				}
			}
			content := e.vecs.sets[setKey{dim: 256}]
			meta := e.vecs.sets[setKey{metadata: true, dim: 256}]
			refs := *e.vecs.docs[42]
			if refs.c.n != 3 || refs.m.n != 1 {
				t.Fatalf("document 42 holds %d passages and %d metadata vectors, want 3 and 1", refs.c.n, refs.m.n)
			}
			live := content.live + meta.live
			if got := vectorSearch(t, e, passages[2], 1, "content", nil); !slices.Equal(got, []int64{42}) {
				t.Fatalf("nearest to document 42's third passage = %v", got)
			}

			if err := e.Delete(ctx, 42, 2); err != nil {
				t.Fatal(err)
			}
			d := docs[42]
			d.Rev, d.ContentVectors = 2, [][]float32{c.contentByID[7]}
			if _, err := e.Upsert(ctx, []engine.Document{d}); err != nil {
				t.Fatal(err)
			}
			if tc.crash {
				// The directory as a kill -9 leaves it (no checkpoint
				// since the delete), with the erased vectors back in
				// place (the files' prefix from before the delete).
				crashed := filepath.Join(filepath.Dir(dir), "crashed")
				copyDir(t, dir, crashed)
				if err := e.Close(); err != nil {
					t.Fatal(err)
				}
				for p, b := range saved {
					rel, _ := filepath.Rel(dir, p)
					f, err := os.OpenFile(filepath.Join(crashed, rel), os.O_WRONLY, 0)
					if err != nil {
						t.Fatal(err)
					}
					_, err = f.WriteAt(b, 0)
					if cerr := f.Close(); err == nil {
						err = cerr
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				dir = crashed
				if !bytes.Contains(vectorFiles(t, dir), f32Bytes(passages[1])) {
					t.Fatal("the simulated crash left no vectors to erase: nothing tested")
				}
				if e, err = Open(dir, opts); err != nil {
					t.Fatal(err)
				}
				content = e.vecs.sets[setKey{dim: 256}]
				meta = e.vecs.sets[setKey{metadata: true, dim: 256}]
			} else if got := content.live + meta.live; got != live-4 {
				t.Errorf("%d live vectors after the delete, want %d (4 fewer)", got, live-4)
			}
			if _, ok := e.vecs.docs[42]; ok {
				t.Error("the vector index still references document 42's vectors")
			}
			// The tombstone: the record only, holding id and revision.
			stored, err := e.idx.Document(docID(42))
			if err != nil || stored == nil {
				t.Fatalf("tombstone of document 42: %v, %v", stored, err)
			}
			stored.VisitFields(func(f index.Field) {
				if f.Name() != fieldRecord {
					t.Errorf("the tombstone keeps field %q", f.Name())
					return
				}
				r, err := decodeRecord(42, f.Value())
				if err != nil || !r.deleted || r.rev != 2 || !reflect.DeepEqual(r, record{id: 42, rev: 2, deleted: true, hasLens: true}) {
					t.Errorf("tombstone record %+v (%v), want id and revision only", r, err)
				}
			})
			for i := range refs.c.n {
				if v := content.full.vector(refs.c.first + i); slices.ContainsFunc(v, func(x float32) bool { return x != 0 }) {
					t.Errorf("passage %d of document 42 still in the full-precision store", i)
				}
			}
			if v := meta.full.vector(refs.m.first); slices.ContainsFunc(v, func(x float32) bool { return x != 0 }) {
				t.Error("document 42's metadata vector still in the full-precision store")
			}
			for _, q := range gone {
				if got := vectorSearch(t, e, q, 200, "content", nil); slices.Contains(got, 42) {
					t.Errorf("document 42 found by one of its vectors: %v", got)
				}
			}
			if got := vectorSearch(t, e, c.contentByID[7], 2, "content", nil); !slices.Contains(got, 43) {
				t.Errorf("document 43 not found by its new vector: %v", got)
			}
			if tc.inMemory {
				return
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			files := vectorFiles(t, dir)
			for i, v := range append(slices.Clone(gone), replaced) {
				if bytes.Contains(files, f32Bytes(v)) {
					t.Errorf("vector %d of the deleted or replaced ones is still in the vector files", i)
				}
			}
			if !bytes.Contains(files, f32Bytes(c.contentByID[7])) {
				t.Error("a live document's vector is not in the vector files: the scan cannot find anything")
			}
			if e, err = Open(dir, opts); err != nil {
				t.Fatal(err)
			}
			if got := vectorSearch(t, e, passages[0], 200, "content", nil); slices.Contains(got, 42) {
				t.Errorf("document 42 found after a reopen: %v", got)
			}
		})
	}
}
