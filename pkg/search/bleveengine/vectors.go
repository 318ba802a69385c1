package bleveengine

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/search/ann"
)

// The vector index: every content passage and metadata vector the engine
// holds, by target and dimension (a vecSet each), outside the records.
// A vecSet keeps
//
//   - the full-precision vectors (fullStore: a memory-mapped file, or
//     memory for an in-memory engine), for re-ranking and the graph;
//   - int8 codes with a scale per vector, laid out by dimension in blocks
//     of 1,024 (ann.Codes), in memory: the exact scan; the full blocks
//     are kept in a file too (codesfile.go), so that a start loads them;
//   - an HNSW graph (ann.Graph) over the full-precision vectors, unless
//     Options.VectorGraph says otherwise;
//   - owner: the table slot of each vector (-1: replaced or deleted).
//
// Vectors are numbered in a set in the order they are appended and never
// reused; a document's passages are consecutive. docs maps a document id
// to its vectors in each target with a stamp (a hash of the vectors'
// values): a document written again with the same vectors (a metadata
// change, a restore from trash) keeps them, and at open the persisted
// index is matched against the bleve index by stamp (persist: vecfile.go).

// setKey names a vecSet.
type setKey struct {
	metadata bool
	dim      int
}

type vecSet struct {
	key   setKey
	full  *fullStore
	codes *ann.Codes
	cf    *codesFile // the codes' file (nil: in memory only)
	// stateN is the set's vector count in the checkpoint read at open
	// (0 for a set created since).
	stateN int64
	graph  *ann.Graph // nil: no graph (exact scans only)
	owner  []int32    // by vector: table slot, -1 when not live; guarded by Engine.mu
	live   int        // vectors with an owner
	mean   meanCache  // MeanContentVector's (mean.go)
	// rebuilt: the checkpoint's graph was missing or damaged and built
	// again at open, so the log's graph records (links in the lost
	// graph) are not replayed: its vectors are added instead.
	rebuilt bool
}

// vecRef is a document's vectors in one target: first and count in the
// set of dimension dim (count 0: none).
type vecRef struct {
	dim   int32
	first int32
	n     int32
	stamp uint64
}

// docVecs is a document's vectors.
type docVecs struct {
	c, m vecRef
}

func (d *docVecs) ref(metadata bool) *vecRef {
	if metadata {
		return &d.m
	}
	return &d.c
}

// vecIndex is the engine's vector index. Its maps and owner arrays are
// guarded by Engine.mu; sets' stores, codes and graphs by their own locks
// (appended to by the one writer outside Engine.mu).
type vecIndex struct {
	sets  map[setKey]*vecSet
	docs  map[int64]*docVecs
	graph GraphMode
	dir   string // "" in memory
	// layout is the codes layout of the sets Open reads (codesLayout of
	// the embedder recorded); sets a write creates take the engine's.
	layout ann.Layout
	// appended counts vectors appended since the last checkpoint; seq
	// numbers the checkpoints (vecfile.go).
	appended int
	seq      uint64
	// stateRead: a checkpoint was read at open (or written since), and
	// stateSum is its STATE's checksum (the codes files name it).
	stateRead bool
	stateSum  uint32
	// codesLoaded and codesBuilt count the vectors whose codes open read
	// from the codes files and quantised from the vector files.
	codesLoaded, codesBuilt int
	// persistCodes is persistCodes when the index was opened.
	persistCodes bool
	codesTime    time.Duration
	// log records the changes after checkpoint seq (vlog.go; nil in
	// memory). At open, replayed counts the vectors replayed from it,
	// fromLog the documents it bound (checked, then nil), dropped those
	// whose vectors the files no longer held; added counts the vectors
	// appended since open (tests: an open after a crash adds none of
	// those the log has).
	log      *vecLog
	replayed int
	fromLog  map[int64]bool
	dropped  int
	added    int
	// erased marks the sets bind erased vectors of since the last
	// syncErased, eraseErr the first failure; erasedVectors counts every
	// vector erased (tests).
	erased        map[setKey]bool
	eraseErr      error
	erasedVectors int64
}

// GraphMode says which vector sets get an HNSW graph.
type GraphMode int

const (
	// GraphAuto builds a graph unless the index records the hash
	// embedder: a short query's hash vector is sparse and unlike any
	// document's, and a graph built from documents finds its nearest
	// neighbours poorly (recall@10 0.55 at ef 100 on 3,000 documents,
	// pkg/search/ann), while the blocked codes scan it exactly at a
	// few dozen multiplies per vector.
	GraphAuto GraphMode = iota
	// GraphAlways builds a graph for every set.
	GraphAlways
	// GraphNever scans every query exactly.
	GraphNever
)

func newVecIndex(dir string, mode GraphMode, layout ann.Layout) *vecIndex {
	return &vecIndex{sets: map[setKey]*vecSet{}, docs: map[int64]*docVecs{}, graph: mode, dir: dir, persistCodes: persistCodes, layout: layout}
}

// codesByVector lays out the codes of sets whose queries are dense by
// vector (codesLayout); the tests and benchmarks turn it off to lay out
// every set by dimension, as before.
var codesByVector = true

// codesLayout returns how the codes of the sets of the embedder recorded
// are laid out: by dimension for the hash embedder, whose short queries
// are sparse (a few dozen non-zero components of 768: a scan reads their
// columns only), by vector for every other (dense queries: a scan reads
// whole vectors either way, and by vector a filtered scan reads only the
// eligible ones, so it costs what the filter admits instead of the whole
// set; issue 23). An index with no embedder recorded is taken as dense,
// as wantGraph takes it.
func (e *Engine) codesLayout() ann.Layout {
	if !codesByVector || (e.embedder != nil && e.embedder.Kind == embed.KindHash) {
		return ann.ByDimension
	}
	return ann.ByVector
}

// stampOf hashes vectors' values: their bytes in memory, which are their
// stored little-endian bytes on the little-endian machines the engine
// runs on (holds hashes those).
func stampOf(v []float32) uint64 {
	if len(v) == 0 {
		return 0
	}
	return xxhash.Sum64(unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*4))
}

// vecStamps is what holds compares of a stored vectors field (format 3):
// the passages' count and dimension and the hash of their bytes, the
// metadata vector's dimension and the hash of its bytes; ok is false for
// a field that does not parse.
type vecStamps struct {
	ok           bool
	n, dim, mdim uint64
	c, m         uint64
}

// stampsOf returns the stamps of a stored vectors field. Hashing the
// stored bytes gives stampOf's value: they are the vectors' bytes in
// memory on the little-endian machines the engine runs on.
func stampsOf(stored []byte) vecStamps {
	if len(stored) == 0 || stored[0] != vectorsVersion {
		return vecStamps{}
	}
	dec := decoder{b: stored[1:]}
	n, dim := dec.uvarint(), dec.uvarint()
	if dec.err != nil || n*dim > uint64(len(dec.b))/4 {
		return vecStamps{}
	}
	c := dec.bytes(4 * n * dim)
	mdim := dec.uvarint()
	if dec.err != nil || mdim > uint64(len(dec.b))/4 {
		return vecStamps{}
	}
	m := dec.bytes(4 * mdim)
	if dec.err != nil || len(dec.b) != 0 {
		return vecStamps{}
	}
	return vecStamps{ok: true, n: n, dim: dim, mdim: mdim, c: xxhash.Sum64(c), m: xxhash.Sum64(m)}
}

// holds reports whether the index holds exactly the vectors of a stored
// vectors field (format 3) for document id, by its stamps, so that open
// need not decode them.
func (vx *vecIndex) holds(id int64, s vecStamps) bool {
	d := vx.docs[id]
	if d == nil || !s.ok {
		return false
	}
	match := func(r vecRef, h, n, dim uint64) bool {
		if n == 0 || dim == 0 {
			return r.n == 0
		}
		return uint64(r.n) == n && uint64(r.dim) == dim && r.stamp == h
	}
	return match(d.c, s.c, s.n, s.dim) && match(d.m, s.m, min(s.mdim, 1), s.mdim)
}

// vectorsOf returns the stored vectors of a document reference
// (passages back to back).
func (s *vecSet) vectorsOf(r vecRef) []float32 {
	out := make([]float32, 0, int(r.n)*s.key.dim)
	for i := range r.n {
		out = append(out, s.full.vector(r.first+i)...)
	}
	return out
}

// minDist returns the exact squared distance of q to the nearest of a
// document's vectors.
func (s *vecSet) minDist(q []float32, r vecRef) float64 {
	best := math.Inf(1)
	for i := range r.n {
		if d := ann.L2(q, s.full.vector(r.first+i)); d < best {
			best = d
		}
	}
	return best
}

// vecSet returns the set of key, creating it. Only the writer calls it.
func (e *Engine) vecSet(key setKey) *vecSet {
	vx := e.vecs
	if s := vx.sets[key]; s != nil {
		return s
	}
	s := &vecSet{key: key, codes: ann.NewCodesLayout(key.dim, e.codesLayout())}
	if vx.dir == "" {
		s.full = newMemStore(key.dim)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if s.full == nil {
		f, err := openFileStore(vx.storePath(key), key.dim, 0)
		if err == nil {
			// A file left by an earlier run is written again.
			if err = f.cut(); err != nil {
				f.close()
			}
		}
		if err != nil {
			// Without a file the set lives in memory until the next start
			// rebuilds it from the bleve index.
			e.vecErr = err
			s.full = newMemStore(key.dim)
		} else {
			s.full = f
		}
	}
	if e.wantGraph() {
		s.graph = ann.New(key.dim, s.full.vector, ann.Config{Shard: graphShard, Seed: uint64(key.dim)})
	}
	vx.newCodesFile(s)
	vx.sets[key] = s
	if s.full.f != nil {
		vx.logSet(key, s.graph)
	}
	return s
}

// graphShard is the shard size of new graphs (ann.Config.Shard; 0:
// ann.DefaultShard); tests make it small to have several shards.
var graphShard int

// wantGraph reports whether a new set gets a graph (Options.VectorGraph);
// the caller holds mu.
func (e *Engine) wantGraph() bool {
	switch e.vecs.graph {
	case GraphAlways:
		return true
	case GraphNever:
		return false
	}
	return e.embedder == nil || e.embedder.Kind != embed.KindHash
}

// stageVectors appends the vectors of r that the index does not hold yet
// (a document written with the vectors it has keeps them) and returns
// the document's vectors after the write. Nothing is searchable until
// bindVectors. Only the writer calls it, holding vecMu.
func (e *Engine) stageVectors(r *record) (docVecs, error) {
	vx := e.vecs
	var out docVecs
	if old := vx.docs[r.id]; old != nil {
		out = *old
	}
	if r.deleted || r.keepVectors {
		return out, nil
	}
	targets := []struct {
		metadata bool
		v        []float32
		dim      int
	}{{false, r.cvec, r.cdim}, {true, r.mvec, len(r.mvec)}}
	for _, t := range targets {
		ref := out.ref(t.metadata)
		if len(t.v) == 0 || t.dim == 0 {
			*ref = vecRef{}
			continue
		}
		st := stampOf(t.v)
		n := len(t.v) / t.dim
		if ref.n > 0 && ref.stamp == st && int(ref.dim) == t.dim && int(ref.n) == n {
			continue
		}
		set := e.vecSet(setKey{metadata: t.metadata, dim: t.dim})
		first := int32(-1)
		for p := range n {
			v := t.v[p*t.dim : (p+1)*t.dim]
			id, err := vx.appendVector(set, v)
			if err != nil {
				return out, err
			}
			vx.added++
			if first < 0 {
				first = id
			}
		}
		*ref = vecRef{dim: int32(t.dim), first: first, n: int32(n), stamp: st}
		vx.appended += n
	}
	return out, nil
}

// bindVectors makes the document in slot own its vectors nv (live) or
// none (a tombstone). Vectors the document no longer has (replaced, or
// all of them for a tombstone) are erased: overwritten with zeros in the
// full-precision store (memory or file) and the codes, so that nothing
// of a deleted or purged document's content stays in the vector index
// (the sets' stores are synced by syncErased). The caller holds mu and
// vecMu.
func (vx *vecIndex) bind(id int64, slot int32, nv docVecs, live bool) {
	old := vx.docs[id]
	for _, metadata := range []bool{false, true} {
		nref := *nv.ref(metadata)
		if old != nil {
			if oref := *old.ref(metadata); oref.n > 0 && (oref != nref || !live) {
				key := setKey{metadata, int(oref.dim)}
				vx.own(key, oref, slot, -1)
				vx.erase(key, oref)
			}
		}
		if live && nref.n > 0 {
			vx.own(setKey{metadata, int(nref.dim)}, nref, -1, slot)
		}
	}
	if !live || nv.c.n == 0 && nv.m.n == 0 {
		delete(vx.docs, id)
		if old != nil {
			vx.logBind(id, nil)
		}
		return
	}
	d := nv
	vx.docs[id] = &d
	if old == nil || *old != d {
		vx.logBind(id, &d)
	}
}

// erase overwrites r's vectors in set key with zeros (see bind); a file
// that cannot be written is reported by syncErased.
func (vx *vecIndex) erase(key setKey, r vecRef) {
	s := vx.sets[key]
	if s == nil {
		return
	}
	if err := s.full.clear(r.first, r.n); err != nil && vx.eraseErr == nil {
		vx.eraseErr = err
	}
	L := int32(s.codes.Lanes())
	for i := r.first; i < r.first+r.n; i++ {
		s.codes.Clear(i)
		if s.cf != nil && int(i/L) < s.cf.blocks {
			s.cf.dirty[int(i/L)] = true
		}
	}
	if vx.erased == nil {
		vx.erased = map[setKey]bool{}
	}
	vx.erased[key] = true
	vx.erasedVectors += int64(r.n)
}

// syncErased makes the erasures since the last call durable and returns
// the first failure among them. The caller holds vecMu.
func (vx *vecIndex) syncErased() error {
	err := vx.eraseErr
	for key := range vx.erased {
		if s := vx.sets[key]; s != nil {
			if serr := s.full.sync(); serr != nil && err == nil {
				err = fmt.Errorf("erase vectors: %w", serr)
			}
		}
	}
	// The erased vectors' codes in the codes files (and blocks open
	// found damaged or refreshed).
	for _, s := range vx.sets {
		if cerr := vx.writeDirtyCodes(s); cerr != nil {
			vx.dropCodesFile(s, cerr)
		}
	}
	vx.erased, vx.eraseErr = nil, nil
	return err
}

// own sets the owner of r's vectors to slot where it is from (any owner
// when from is -1).
func (vx *vecIndex) own(key setKey, r vecRef, from, slot int32) {
	s := vx.sets[key]
	if s == nil {
		return
	}
	for need := int(r.first + r.n); len(s.owner) < need; {
		s.owner = append(s.owner, -1)
	}
	for i := r.first; i < r.first+r.n; i++ {
		cur := s.owner[i]
		if from >= 0 && cur != from {
			continue
		}
		switch {
		case cur < 0 && slot >= 0:
			s.live++
		case cur >= 0 && slot < 0:
			s.live--
		}
		s.owner[i] = slot
	}
}

// storedVectors returns a document's stored vectors of a target (nil
// when none); the caller holds mu or is the writer.
func (e *Engine) storedVectors(id int64, metadata bool) ([]float32, int) {
	d := e.vecs.docs[id]
	if d == nil {
		return nil, 0
	}
	r := *d.ref(metadata)
	s := e.vecs.sets[setKey{metadata, int(r.dim)}]
	if r.n == 0 || s == nil {
		return nil, 0
	}
	return s.vectorsOf(r), int(r.dim)
}

// storePath is the file of a set's full-precision vectors.
func (vx *vecIndex) storePath(k setKey) string {
	t := "c"
	if k.metadata {
		t = "m"
	}
	return filepath.Join(vx.dir, t+"-"+strconv.Itoa(k.dim)+".f32")
}
