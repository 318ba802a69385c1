package bleveengine

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/search/ann"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// codesCorpusDocs: more than two full code blocks of 1,024 vectors in
// each set (content and metadata).
const codesCorpusDocs = 2600

// quantisedCodes returns set s's codes quantised from its vector file, as
// an open without codes files makes them.
func quantisedCodes(s *vecSet) *ann.Codes {
	c := ann.NewCodes(s.key.dim)
	c.AppendFrom(int(s.full.n.Load()), s.full.vector, 2)
	return c
}

// openWith opens dir with persistCodes set to persist (restored after),
// without graphs (the codes are the same with them).
func openWith(t *testing.T, dir string, persist bool) *Engine {
	t.Helper()
	old := persistCodes
	persistCodes = persist
	defer func() { persistCodes = old }()
	e, err := Open(dir, Options{VectorGraph: GraphNever})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// codesSearches returns the ids of vector searches of both targets.
func codesSearches(t *testing.T, e *Engine, c *annCorpus) [][]int64 {
	t.Helper()
	var out [][]int64
	for _, q := range append(slices.Clone(c.short[:8]), c.long[:8]...) {
		out = append(out, vectorSearch(t, e, q, 10, "content", nil), vectorSearch(t, e, q, 10, "metadata", nil), vectorSearch(t, e, q, 10, "content", []int64{3}))
	}
	return out
}

// checkCodes fails unless every set's codes are those quantised from its
// vector file, bit for bit, and its codes file (when it has one) holds
// the records of the blocks in memory: no code of an erased vector left.
func checkCodes(t *testing.T, e *Engine) {
	t.Helper()
	for k, s := range e.vecs.sets {
		if !s.codes.Equal(quantisedCodes(s)) {
			t.Fatalf("set %+v: the codes differ from those quantised from the vector file", k)
		}
		if s.cf == nil {
			continue
		}
		data, err := os.ReadFile(e.vecs.codesPath(k))
		if err != nil {
			t.Fatal(err)
		}
		for bi := range s.cf.blocks {
			off := codesHeaderSize + bi*s.cf.recLen
			if off+s.cf.recLen > len(data) || !bytes.Equal(data[off:off+s.cf.recLen], s.codes.AppendBlockRecord(nil, bi)) {
				t.Fatalf("set %+v: the file's record of block %d is not the block in memory", k, bi)
			}
		}
	}
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestCodesFileLoadsTheCodesQuantised: an Open reads the codes the last
// checkpoint wrote instead of quantising them, and they are bit for bit
// the codes quantised from the vector files; searches answer the same as
// an Open that quantises everything. A missing, damaged, cut or stale
// codes file (another checkpoint's: a binary without codes files wrote
// since, or a crash between the codes' header and STATE), or one holding
// codes of vectors erased since, falls back to quantising what it cannot
// vouch for; the next Open loads every full block again.
func TestCodesFileLoadsTheCodesQuantised(t *testing.T) {
	ctx := context.Background()
	c := newANNCorpus(t, codesCorpusDocs+20)
	root := t.TempDir()
	base := filepath.Join(root, "base")
	e := openWith(t, base, true)
	if _, err := e.Upsert(ctx, c.docs[:codesCorpusDocs]); err != nil {
		t.Fatal(err)
	}
	before := codesSearches(t, e, c)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	recLen := int64(ann.BlockRecordSize(256, 1024))
	codes := func(dir, set string) string { return filepath.Join(dir, vectorsDir, set+"-256.codes") }
	const all = 2 * 2 * 1024 // two sets of two full blocks
	more := func(t *testing.T, dir string, persist bool) {
		e := openWith(t, dir, persist)
		if _, err := e.Upsert(ctx, c.docs[codesCorpusDocs:]); err != nil {
			t.Fatal(err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string)
		loaded  int // vectors whose codes the Open reads
	}{
		{name: "intact", loaded: all},
		{name: "no codes files", loaded: 0, prepare: func(t *testing.T, dir string) {
			for _, set := range []string{"c", "m"} {
				if err := os.Remove(codes(dir, set)); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{name: "a record damaged", loaded: all - 1024, prepare: func(t *testing.T, dir string) {
			flipByte(t, codes(dir, "c"), codesHeaderSize+recLen+100)
		}},
		{name: "a scale damaged", loaded: all - 1024, prepare: func(t *testing.T, dir string) {
			flipByte(t, codes(dir, "m"), codesHeaderSize+256*1024+2)
		}},
		{name: "cut in a record", loaded: all - 1024, prepare: func(t *testing.T, dir string) {
			if err := os.Truncate(codes(dir, "c"), codesHeaderSize+recLen+10); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a header damaged", loaded: all - 2048, prepare: func(t *testing.T, dir string) {
			flipByte(t, codes(dir, "m"), 20)
		}},
		{name: "another checkpoint, by a binary without codes files", loaded: 0, prepare: func(t *testing.T, dir string) {
			more(t, dir, false)
		}},
		{name: "STATE from before the checkpoint that wrote the codes", loaded: 0, prepare: func(t *testing.T, dir string) {
			state := filepath.Join(dir, vectorsDir, stateFile)
			old, err := os.ReadFile(state)
			if err != nil {
				t.Fatal(err)
			}
			more(t, dir, true)
			if err := os.WriteFile(state, old, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "vectors erased by a binary without codes files", loaded: all, prepare: func(t *testing.T, dir string) {
			e := openWith(t, dir, false)
			for _, id := range []int64{3, 4, 1500, 2100} {
				if err := e.Delete(ctx, id, 2); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, ref := filepath.Join(t.TempDir(), "idx"), filepath.Join(t.TempDir(), "ref")
			copyDir(t, base, dir)
			if tt.prepare != nil {
				tt.prepare(t, dir)
			}
			copyDir(t, dir, ref)
			r := openWith(t, ref, false)
			want := codesSearches(t, r, c)
			r.Close()
			if tt.name == "intact" && !slices.EqualFunc(want, before, slices.Equal) {
				t.Fatal("searches after a reopen differ from those before")
			}

			e := openWith(t, dir, true)
			if got := e.opened.codesLoaded; got != tt.loaded {
				t.Errorf("the Open read %d vectors' codes, want %d", got, tt.loaded)
			}
			// Every vector's code was read, quantised, or appended with
			// a document the vector index did not hold.
			if got, n := e.opened.codesLoaded+e.opened.codesBuilt+e.vecs.added, int(e.vecs.sets[setKey{dim: 256}].full.n.Load()+e.vecs.sets[setKey{metadata: true, dim: 256}].full.n.Load()); got != n {
				t.Errorf("the Open read, quantised or appended %d vectors' codes of %d", got, n)
			}
			checkCodes(t, e)
			if got := codesSearches(t, e, c); !slices.EqualFunc(got, want, slices.Equal) {
				t.Fatal("searches differ from those of an Open that quantises every code")
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			e = openWith(t, dir, true)
			defer e.Close()
			if got := e.opened.codesLoaded; got != all {
				t.Errorf("the next Open read %d vectors' codes, want %d", got, all)
			}
			checkCodes(t, e)
			if got := codesSearches(t, e, c); !slices.EqualFunc(got, want, slices.Equal) {
				t.Fatal("searches of the next Open differ")
			}
		})
	}
}

// TestCodesFileFollowsErasures: a delete and a changed vector rewrite
// the codes file's records of the erased vectors' blocks at once (no
// code of them stays on disk), and the next Open, also after a kill,
// reads codes that are those of the vector files.
func TestCodesFileFollowsErasures(t *testing.T) {
	ctx := context.Background()
	c := newANNCorpus(t, codesCorpusDocs)
	dir := filepath.Join(t.TempDir(), "idx")
	e := openWith(t, dir, true)
	if _, err := e.Upsert(ctx, c.docs); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openWith(t, dir, true)
	defer func() { e.Close() }()
	content := e.vecs.sets[setKey{dim: 256}]
	// A document to delete and one to update, both with their content
	// vector in a block of the file (which vector a document got depends
	// on the order the writes were applied in, not on its place in
	// c.docs).
	var picked []engine.Document
	for _, d := range c.docs {
		if r := e.vecs.docs[d.ID]; d.ID != 7 && r != nil && int(r.c.first/1024) < content.cf.blocks {
			if picked = append(picked, d); len(picked) == 2 {
				break
			}
		}
	}
	if len(picked) < 2 {
		t.Fatalf("fewer than two documents have their vector in the file's %d blocks", content.cf.blocks)
	}
	refs := *e.vecs.docs[picked[0].ID]
	if err := e.Delete(ctx, picked[0].ID, 2); err != nil {
		t.Fatal(err)
	}
	d := picked[1]
	d.Rev, d.ContentVectors = 2, [][]float32{c.contentByID[7]}
	old := e.vecs.docs[d.ID].c
	if _, err := e.Upsert(ctx, []engine.Document{d}); err != nil {
		t.Fatal(err)
	}
	erased := []int32{refs.c.first, old.first}
	checkCodes(t, e)
	zero := ann.NewCodes(256)
	zero.Append(make([]float32, 256))
	for _, id := range erased {
		if int(id/1024) >= content.cf.blocks {
			t.Fatalf("vector %d is not in a block of the file (%d blocks)", id, content.cf.blocks)
		}
		one := ann.NewCodes(256)
		one.Append(content.full.vector(id))
		if !one.Equal(zero) {
			t.Fatalf("erased vector %d is not zeros in the vector file", id)
		}
	}
	want := codesSearches(t, e, c)
	crashed := filepath.Join(t.TempDir(), "crashed")
	copyDir(t, dir, crashed)
	k := openWith(t, crashed, true)
	defer k.Close()
	if k.opened.codesLoaded == 0 {
		t.Error("the Open after a kill read no codes")
	}
	checkCodes(t, k)
	if got := codesSearches(t, k, c); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatal("searches after a kill differ")
	}
}

// TestOpenWritesTheCodesItQuantised: an Open that quantised many codes
// (an index from before codes files) writes them by a checkpoint of its
// own, so that the next start reads them even after a kill.
func TestOpenWritesTheCodesItQuantised(t *testing.T) {
	ctx := context.Background()
	c := newANNCorpus(t, codesCorpusDocs)
	dir := filepath.Join(t.TempDir(), "idx")
	e := openWith(t, dir, false)
	if _, err := e.Upsert(ctx, c.docs); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, vectorsDir, "*.codes")); len(m) != 0 {
		t.Fatalf("codes files written with persistCodes off: %v", m)
	}
	old := codesCheckpointAt
	codesCheckpointAt = 1024
	defer func() { codesCheckpointAt = old }()
	e = openWith(t, dir, true)
	defer e.Close()
	if e.opened.codesLoaded != 0 {
		t.Fatalf("read %d codes from no file", e.opened.codesLoaded)
	}
	e.bg.Wait()
	want := codesSearches(t, e, c)
	crashed := filepath.Join(t.TempDir(), "crashed")
	copyDir(t, dir, crashed)
	k := openWith(t, crashed, true)
	defer k.Close()
	if got := k.opened.codesLoaded; got != 2*2*1024 {
		t.Errorf("the Open after a kill read %d vectors' codes, want %d", got, 2*2*1024)
	}
	checkCodes(t, k)
	if got := codesSearches(t, k, c); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatal("searches after a kill differ")
	}
}

// TestCodesFileOfAnotherLayoutIsConverted: a codes file written in the
// other layout than its set's (version 1, by dimension, as every file
// before the layouts, opened for a dense set laid out by vector; the
// reverse; and one by vector in the tiles of 128 that binaries up to
// main 1b196c6 wrote) is read and converted, not quantised: the codes
// are those quantised from the vector files, searches answer as before, the file
// is written again in the set's layout by the next checkpoint, and the
// Open after reads it as it is, also after a kill.
func TestCodesFileOfAnotherLayoutIsConverted(t *testing.T) {
	ctx := context.Background()
	c := newANNCorpus(t, codesCorpusDocs)
	const all = 2 * 2 * 1024 // two sets of two full blocks
	for _, tt := range []struct {
		name          string
		wrote, opened bool // codesByVector
		magic, after  string
		tiles128      bool // the file rewritten in tiles of 128 before the Open
	}{
		{name: "version 1 by dimension, opened by vector", wrote: false, opened: true, magic: "DRCODE1\n", after: "DRCODE2\n"},
		{name: "version 2 by vector, opened by dimension", wrote: true, opened: false, magic: "DRCODE2\n", after: "DRCODE1\n"},
		{name: "version 2 by vector in tiles of 128, opened by vector", wrote: true, opened: true, magic: "DRCODE2\n", after: "DRCODE2\n", tiles128: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			old := codesByVector
			defer func() { codesByVector = old }()
			dir := filepath.Join(t.TempDir(), "idx")
			codesByVector = tt.wrote
			e := openWith(t, dir, true)
			if _, err := e.Upsert(ctx, c.docs); err != nil {
				t.Fatal(err)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			magic := func() string {
				b, err := os.ReadFile(filepath.Join(dir, vectorsDir, "c-256.codes"))
				if err != nil || len(b) < 8 {
					t.Fatalf("codes file: %v", err)
				}
				return string(b[:8])
			}
			if got := magic(); got != tt.magic {
				t.Fatalf("the file written starts %q, want %q", got, tt.magic)
			}
			e = openWith(t, dir, true)
			want := codesSearches(t, e, c)
			e.Close()

			if tt.tiles128 {
				codesAsTiles128(t, filepath.Join(dir, vectorsDir, "c-256.codes"))
			}
			codesByVector = tt.opened
			e = openWith(t, dir, true)
			if got := e.opened.codesLoaded; got != all {
				t.Errorf("the Open read and converted %d vectors' codes, want %d", got, all)
			}
			for k, s := range e.vecs.sets {
				if wantL := map[bool]ann.Layout{false: ann.ByDimension, true: ann.ByVector}[tt.opened]; s.codes.Layout() != wantL {
					t.Fatalf("set %+v laid out %v, want %v", k, s.codes.Layout(), wantL)
				}
			}
			checkCodes(t, e)
			if got := codesSearches(t, e, c); !slices.EqualFunc(got, want, slices.Equal) {
				t.Fatal("searches after the conversion differ")
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			if got := magic(); got != tt.after {
				t.Fatalf("the file after a checkpoint starts %q, want %q", got, tt.after)
			}
			if b, err := os.ReadFile(filepath.Join(dir, vectorsDir, "c-256.codes")); err != nil {
				t.Fatal(err)
			} else if h, ok := decodeCodesHeader(b[:codesHeaderSize]); !ok || h.layout != map[bool]ann.Layout{false: ann.ByDimension, true: ann.ByVector}[tt.opened] {
				t.Fatalf("the file after a checkpoint: header %+v (%v), want the set's layout", h, ok)
			}
			crashed := filepath.Join(t.TempDir(), "crashed")
			copyDir(t, dir, crashed)
			k := openWith(t, crashed, true)
			defer k.Close()
			if got := k.opened.codesLoaded; got != all {
				t.Errorf("the next Open read %d vectors' codes, want %d", got, all)
			}
			checkCodes(t, k)
			if got := codesSearches(t, k, c); !slices.EqualFunc(got, want, slices.Equal) {
				t.Fatal("searches of the next Open differ")
			}
		})
	}
}

// codesAsTiles128 rewrites a codes file laid out by vector as binaries
// up to main 1b196c6 wrote it: each record's codes in tiles of 128
// components (tile t holds components [128t, 128t+w) of the lanes, w
// bytes a lane; they are now tiles of 640), the header's layout
// ann.ByVector128.
func codesAsTiles128(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, ok := decodeCodesHeader(b[:codesHeaderSize])
	if !ok || h.layout != ann.ByVector {
		t.Fatalf("%s: header %+v (%v), want one by vector", path, h, ok)
	}
	dim, lanes := h.dim, h.lanes
	recLen := ann.BlockRecordSize(dim, lanes)
	for bi := range h.blocks {
		rec := b[codesHeaderSize+bi*recLen : codesHeaderSize+(bi+1)*recLen]
		codes := slices.Clone(rec[:dim*lanes])
		for l := range lanes {
			for d := range dim {
				t6, t1 := d/640, d/128
				rec[t1*128*lanes+l*min(128, dim-t1*128)+d%128] = codes[t6*640*lanes+l*min(640, dim-t6*640)+d%640]
			}
		}
		binary.LittleEndian.PutUint32(rec[recLen-4:], crc32.Checksum(rec[:recLen-4], castagnoli))
	}
	h.layout = ann.ByVector128
	copy(b, h.encode())
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCodesLayoutFollowsTheEmbedder: the codes of the hash embedder's
// sets (sparse short queries) are laid out by dimension, every other
// embedder's (dense queries) and an index with none recorded by vector,
// on a write and after a reopen.
func TestCodesLayoutFollowsTheEmbedder(t *testing.T) {
	ctx := context.Background()
	c := newANNCorpus(t, 50)
	for _, tt := range []struct {
		name string
		id   *embed.Identity
		want ann.Layout
	}{
		{name: "hash", id: &embed.Identity{Kind: embed.KindHash, Model: "hash-v1-256", Dimensions: 256}, want: ann.ByDimension},
		{name: "use", id: &embed.Identity{Kind: embed.KindUSE, Model: "use", Dimensions: 256}, want: ann.ByVector},
		{name: "none recorded", want: ann.ByVector},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "idx")
			e := openWith(t, dir, true)
			if tt.id != nil {
				if err := e.SetEmbedder(ctx, *tt.id); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := e.Upsert(ctx, c.docs); err != nil {
				t.Fatal(err)
			}
			check := func(e *Engine, when string) {
				if len(e.vecs.sets) == 0 {
					t.Fatalf("%s: no vector set", when)
				}
				for k, s := range e.vecs.sets {
					if got := s.codes.Layout(); got != tt.want {
						t.Errorf("%s: set %+v laid out %v, want %v", when, k, got, tt.want)
					}
				}
			}
			check(e, "after the write")
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			e = openWith(t, dir, true)
			defer e.Close()
			check(e, "after a reopen")
		})
	}
}
