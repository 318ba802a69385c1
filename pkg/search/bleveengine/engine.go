package bleveengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/index/scorch"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// Options configure an Engine. The zero value is usable.
type Options struct {
	// InMemory keeps the index in memory only (for tests); the directory
	// passed to Open is ignored and nothing survives Close.
	InMemory bool
	// BatchSize is the number of documents per index batch in Upsert
	// (default 1024; larger batches index faster, each waits for one
	// durable commit).
	BatchSize int
	// MaxPrefixTerms bounds the number of index terms one prefix (pre*) may
	// expand to (default DefaultMaxPrefixTerms). A prefix matching more
	// fails the search with a *dsl.Error asking for a longer prefix.
	MaxPrefixTerms int
	// PersistNap: the persister waits this long before writing what was
	// indexed in memory to disk, so the small segments of several batches
	// are merged in memory and written as one (fewer files, less merging
	// on disk). Upsert returns once its batch is on disk, so each write
	// waits up to PersistNap longer and, under load, the indexer's batches
	// grow instead: less CPU per document, more index lag (ingest
	// benchmark, 20,000 documents: 100 ms took a fifth off the search
	// process's CPU per document and raised the lag's p99 from 0.7 s to
	// 2.2 s). 0, the default, is bleve's (no nap).
	PersistNap time.Duration
	// VectorGraph says which vector sets get an HNSW graph for dense
	// queries (default GraphAuto; see vectors.go).
	VectorGraph GraphMode
}

// DefaultMaxPrefixTerms is the default of Options.MaxPrefixTerms.
const DefaultMaxPrefixTerms = 10000

const defaultBatchSize = 1024

// formatKey holds the on-disk format of the index (the document layout and
// the analysis); an index of another format is refused rather than
// misread.
var formatKey = []byte("docrepo.bleveengine.format")

// Formats: "1" had no common grams field (still readable: phrases are
// then checked on exact tokens only); "2" adds it; "3" stores content
// vectors as passages (field "w"; format 2's single vectors, field "v",
// are still read, as one passage). Opening a format 2 index makes it
// format 3, so that an older engine refuses it rather than ignoring its
// passage vectors. "4" adds the pair field ("p", every adjacent pair of
// exact tokens). A format 2 or 3 index is read and written without it
// (it stays format 3; its phrases are found as before) until it is
// rebuilt (docrepoctl reindex, or Reset): the pair field is used only
// when every document of the index has it, and a format 4 index is
// refused by an engine that would write documents without it. "5" adds
// the window pairs of common terms and the version of C each document was
// analysed with (fields "n" and "nv", the common terms under commonKey;
// window.go). Opening a format 4 index makes it format 5: its documents
// have no version, so NEAR checks their positions as before, and the
// documents written from then on get window pairs.
const (
	format         = "5"
	formatPairs    = "4"
	formatPassages = "3"
	formatGrams    = "2"
	formatNoGram   = "1"
)

// indexFeatures are the optional fields an index's format has.
type indexFeatures struct {
	grams bool // the common grams field (format 2 and later)
	pairs bool // the pair field (format 4)
	// window: the window pairs of common terms and the version markers
	// (format 5; format 4 indexes are made format 5 at open).
	window bool
}

// allFeatures are a new index's.
var allFeatures = indexFeatures{grams: true, pairs: true, window: true}

// embedderKey holds the identity of the embedder whose vectors the index
// holds (JSON of embed.Identity), as SetEmbedder recorded it.
var embedderKey = []byte("docrepo.bleveengine.embedder")

// Engine is the embedded search engine: bleve (scorch) for the content, an
// in-memory table of metadata, revisions and vectors for everything else.
// It implements engine.Engine and is safe for concurrent use; it must be
// the only writer of its directory.
type Engine struct {
	dir  string
	opts Options
	an   *analyzers

	writeMu sync.Mutex // serialises Upsert, Delete, Reset and SetEmbedder
	// vecMu serialises the vector index's writers (the batches of one
	// Upsert are written concurrently); taken before mu.
	vecMu sync.Mutex

	// unput counts the batches written to the bleve index whose records
	// the table does not hold yet (beginBatch .. putRecords or
	// abandonBatch). While there are any, an index reader may hold
	// content the table does not: term counts read then are not cached.
	unput atomic.Int64

	// common is the current version of C (window.go); sinceCommon
	// counts the documents written since growCommon last looked for new
	// common terms, candidates holds their exact tokens, and
	// commonChecked says the index holds commonCheckedKey (the last two
	// guarded by writeMu).
	common        atomic.Pointer[commonSet]
	sinceCommon   int
	candidates    commonCandidates
	commonChecked bool
	// freqs are the decoded postings of the terms NEAR's window pairs
	// decide (termfreqs.go; segments of any generation); warmed is
	// closed when warmFreqs, started by Open, is done (nil: not started).
	freqs  termFreqs
	warmed chan struct{}

	mu       sync.RWMutex // guards the fields below; Search holds it shared
	idx      bleve.Index
	features indexFeatures // of idx
	tab      *table
	slots    *slotCache // of tab
	embedder *embed.Identity
	vecs     *vecIndex
	// vecErr is the last error writing the vector files (logged by the
	// caller through VectorStats; the vectors are then rebuilt from the
	// bleve index at the next start).
	vecErr error
	closed bool
	// opened is where Open's time went (tests and benchmarks).
	opened openTimes
	// bg counts the goroutines Open started (checkpointCodes).
	bg sync.WaitGroup
}

var (
	_ engine.Engine      = (*Engine)(nil)
	_ engine.VectorStage = (*Engine)(nil)
)

// table is the in-memory state of every document the index holds,
// tombstones included, by slot. Slots are never reused while the engine is
// open.
type table struct {
	slots map[int64]int32
	recs  []record
	live  int
	// pending counts the live documents whose content vectors are still
	// to come.
	pending int

	// BM25 collection statistics of the live documents: how many have
	// content, their total field lengths, and how many lack lengths
	// (format 1 records; then bleve's own statistics are used).
	withContent int
	sumLens     [numLenFields]int64
	noLens      int

	// gen counts the writes to the table (put); each write brings the
	// cached statistics views to the new generation (statsCache.update).
	gen uint64
	// stats caches the statistics views of recent callers (statsView).
	stats *statsCache
	// folders lists, per folder, the slots of the live documents in it,
	// ascending (folderIndex).
	folders folderIndex
	// liveSlots holds the slots of the live documents and ids the id of
	// each slot: a search touching many matches reads these compact
	// copies instead of each match's record (a cache miss apiece).
	liveSlots bitset
	ids       []int64
	// cols are compact copies of the fields metadata filters and sorts
	// read (metaColumns).
	cols metaColumns
}

// setLive records slot's liveness in liveSlots.
func (t *table) setLive(slot int32, r *record) {
	if r.deleted {
		t.liveSlots.clear(int(slot))
	} else {
		t.liveSlots = t.liveSlots.with(int(slot))
	}
}

// account adds (sign 1) or removes (sign -1) a record's share of the
// collection statistics.
func (t *table) account(r *record, sign int) {
	if r.deleted {
		return
	}
	t.live += sign
	if r.pending {
		t.pending += sign
	}
	if !r.hasLens {
		t.noLens += sign
		return
	}
	if r.lens[lenExact] > 0 {
		t.withContent += sign
	}
	for i, n := range r.lens {
		t.sumLens[i] += int64(sign) * int64(n)
	}
}

func newTable() *table {
	return &table{slots: make(map[int64]int32), stats: newStatsCache(), folders: folderIndex{}}
}

func (t *table) get(id int64) (*record, bool) {
	s, ok := t.slots[id]
	if !ok {
		return nil, false
	}
	return &t.recs[s], true
}

// put stores r (its vectors, kept in the vector index, are dropped),
// updates the cached statistics views with ch, the terms of the content
// r replaces and of its own (nil when unknown), and returns its slot.
func (t *table) put(r record, ch *termChange) int32 {
	r.cvec, r.mvec = nil, nil
	t.gen++
	if s, ok := t.slots[r.id]; ok {
		cur := &t.recs[s]
		old := *cur
		t.account(cur, -1)
		t.folders.move(s, &old, &r)
		t.setLive(s, &r)
		t.cols.set(s, &r)
		*cur = r
		t.account(&r, 1)
		t.stats.update(t, s, &old, cur, ch)
		return s
	}
	s := int32(len(t.recs))
	t.slots[r.id] = s
	t.recs = append(t.recs, r)
	t.ids = append(t.ids, r.id)
	t.account(&r, 1)
	t.folders.move(s, nil, &r)
	t.setLive(s, &r)
	t.cols.set(s, &r)
	t.stats.update(t, s, nil, &t.recs[s], ch)
	return s
}

// Open opens the engine stored in dir, creating it when dir does not exist
// or is empty. With opts.InMemory, dir is ignored.
func Open(dir string, opts Options) (*Engine, error) {
	if opts.BatchSize <= 0 {
		opts.BatchSize = defaultBatchSize
	}
	if opts.MaxPrefixTerms <= 0 {
		opts.MaxPrefixTerms = DefaultMaxPrefixTerms
	}
	e := &Engine{dir: dir, opts: opts, an: newAnalyzers()}
	if err := e.load(); err != nil {
		return nil, err
	}
	// Segments merged while the records were read are not in the slot
	// cache yet.
	e.fillSlotsSoon(e.slots)
	if warmFreqsAtOpen && !opts.InMemory && e.features.window {
		var terms []string
		for _, v := range e.common.Load().versions {
			terms = append(terms, v...)
		}
		if len(terms) > 0 {
			e.warmed = make(chan struct{})
			go e.warmFreqs(terms)
		}
	}
	return e, nil
}

// load opens the index in e.dir and reads the table and the vector index.
func (e *Engine) load() error {
	t0 := time.Now()
	idx, features, err := e.openIndex()
	if err != nil {
		return err
	}
	emb, err := readEmbedder(idx)
	if err != nil {
		_ = idx.Close()
		return fmt.Errorf("bleveengine: open %s: %w", e.dir, err)
	}
	e.idx, e.features, e.embedder = idx, features, emb
	common, err := readCommon(idx)
	if err != nil {
		_ = idx.Close()
		return fmt.Errorf("bleveengine: open %s: %w", e.dir, err)
	}
	e.common.Store(common)
	t1 := time.Now()
	e.vecs, err = e.openVectors()
	if err != nil {
		_ = idx.Close()
		return err
	}
	t2 := time.Now()
	e.tab, e.slots = newTable(), e.newSlots()
	err = loadRecords(idx, e.vecs.holds, e.putLoaded)
	// The load learnt the slots of the segments it read; those merged
	// since (or written meanwhile) are filled in the background.
	e.slots.learned()
	// What open added to the vector index is logged like any write.
	e.vecs.log.flush()
	if err == nil {
		// Codes read from a file of vectors no document owns are made
		// those of the vector files again (erased since, see
		// codesfile.go); then the vectors of documents deleted after the
		// last checkpoint (a crash between a delete and its erasure
		// included), erased as their tombstones were read, and the codes
		// changed are synced.
		e.vecs.refreshUnowned()
		if err = e.vecs.syncErased(); err != nil {
			err = fmt.Errorf("bleveengine: open %s: %w", e.dir, err)
		}
	}
	if err != nil {
		e.vecs.close()
		_ = idx.Close()
		return err
	}
	if err := e.openCommon(idx); err != nil {
		e.vecs.close()
		_ = idx.Close()
		return fmt.Errorf("bleveengine: open %s: %w", e.dir, err)
	}
	t3 := time.Now()
	e.opened = openTimes{index: t1.Sub(t0), vectors: t2.Sub(t1), records: t3.Sub(t2),
		codesLoaded: e.vecs.codesLoaded, codesBuilt: e.vecs.codesBuilt, codes: e.vecs.codesTime}
	if e.dir != "" {
		slog.Info("bleveengine: opened", "dir", e.dir, "documents", e.tab.live, "took", t3.Sub(t0).Round(time.Millisecond),
			"index", e.opened.index.Round(time.Millisecond), "vectors", e.opened.vectors.Round(time.Millisecond),
			"codes", e.opened.codes.Round(time.Millisecond), "records", e.opened.records.Round(time.Millisecond),
			"codes_loaded", e.opened.codesLoaded, "codes_quantised", e.opened.codesBuilt)
	}
	if e.vecs.codesBehind() >= codesCheckpointAt {
		// Many codes were quantised (an index from before codes files,
		// or whose file was stale): a checkpoint writes them now, not at
		// Close or after the next checkpointEvery vectors, so that the
		// next start, even after a kill, reads them.
		e.bg.Add(1)
		go e.checkpointCodes()
	}
	return nil
}

// openTimes is where an Open's time went: opening the bleve index,
// the vector index (checkpoint, log and codes; codes is the codes' share),
// and reading the records.
type openTimes struct {
	index, vectors, codes, records time.Duration
	codesLoaded, codesBuilt        int
}

// checkpointCodes writes a checkpoint (with the codes) unless the engine
// was closed or written to meanwhile (a write's checkpoint writes them).
func (e *Engine) checkpointCodes() {
	defer e.bg.Done()
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	e.mu.RLock()
	closed := e.closed
	e.mu.RUnlock()
	if closed {
		return
	}
	if err := e.checkpoint(); err != nil {
		slog.Warn("bleveengine: the checkpoint after open failed; the next start quantises the codes again", "dir", e.dir, "error", err)
	}
}

// putLoaded puts a record read from the index into the table and matches
// the vector index to it: a document whose vectors the persisted vector
// index holds (by stamp) gets them back, any other has its vectors added.
// Vectors of documents the bleve index no longer holds stay unowned.
// When the record was read from a segment (at, not nil), the slot cache
// learns its slot.
func (e *Engine) putLoaded(r *record, at *segmentDoc) error {
	e.vecMu.Lock()
	defer e.vecMu.Unlock()
	nv, err := e.stageVectors(r)
	if err != nil {
		return fmt.Errorf("bleveengine: open %s: vectors of %d: %w", e.dir, r.id, err)
	}
	e.mu.Lock()
	slot := e.tab.put(*r, nil)
	e.vecs.bind(r.id, slot, nv, !r.deleted)
	if at != nil {
		e.slots.learn(at.ss.Segment(), at.num, slot)
	}
	e.mu.Unlock()
	return nil
}

// readEmbedder returns the embedder identity recorded in idx (nil when
// none is).
func readEmbedder(idx bleve.Index) (*embed.Identity, error) {
	b, err := idx.GetInternal(embedderKey)
	if err != nil || b == nil {
		return nil, err
	}
	var id embed.Identity
	if err := json.Unmarshal(b, &id); err != nil {
		return nil, fmt.Errorf("recorded embedder %q: %w", b, err)
	}
	return &id, nil
}

// Embedder implements engine.Engine: the identity SetEmbedder recorded,
// kept in the index's internal storage.
func (e *Engine) Embedder(ctx context.Context) (embed.Identity, bool, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return embed.Identity{}, false, engine.ErrClosed
	}
	if e.embedder == nil {
		return embed.Identity{}, false, nil
	}
	return *e.embedder, true, nil
}

// SetEmbedder implements engine.Engine. It is durable when it returns.
func (e *Engine) SetEmbedder(ctx context.Context, id embed.Identity) error {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	idx, err := e.writer()
	if err != nil {
		return err
	}
	b, err := json.Marshal(id)
	if err != nil {
		return err
	}
	if err := idx.SetInternal(embedderKey, b); err != nil {
		return fmt.Errorf("bleveengine: record the embedder: %w", err)
	}
	e.mu.Lock()
	e.embedder = &id
	e.mu.Unlock()
	return nil
}

// openIndex opens or creates the index and reports which optional fields
// it has.
func (e *Engine) openIndex() (bleve.Index, indexFeatures, error) {
	if e.opts.InMemory {
		idx, err := e.newIndex("")
		return idx, allFeatures, err
	}
	if e.dir == "" {
		return nil, indexFeatures{}, errors.New("bleveengine: no directory")
	}
	if _, err := os.Stat(filepath.Join(e.dir, "index_meta.json")); err == nil {
		idx, err := bleve.OpenUsing(e.dir, e.scorchConfig())
		if err != nil {
			return nil, indexFeatures{}, fmt.Errorf("bleveengine: open %s: %w", e.dir, err)
		}
		got, err := idx.GetInternal(formatKey)
		switch {
		case err != nil:
		case string(got) == formatGrams:
			// Format 3 reads format 2 documents; new ones get passages.
			err = idx.SetInternal(formatKey, []byte(formatPassages))
		case string(got) == formatPairs:
			// Format 5 reads format 4 documents (no version: NEAR
			// checks their positions); new ones get window pairs.
			if err = idx.SetInternal(formatKey, []byte(format)); err == nil {
				slog.Info("bleveengine: format 4 index made format 5: documents written from now on get NEAR window pairs; reindex to give them to all", "dir", e.dir)
				got = []byte(format)
			}
		case string(got) != format && string(got) != formatPassages && string(got) != formatNoGram:
			err = fmt.Errorf("format %q, want %q: rebuild the index", got, format)
		}
		if err != nil {
			_ = idx.Close()
			return nil, indexFeatures{}, fmt.Errorf("bleveengine: open %s: %w", e.dir, err)
		}
		return idx, indexFeatures{grams: string(got) != formatNoGram, pairs: string(got) == format, window: string(got) == format}, nil
	}
	entries, err := os.ReadDir(e.dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, indexFeatures{}, fmt.Errorf("bleveengine: %w", err)
	case len(entries) > 0:
		return nil, indexFeatures{}, fmt.Errorf("bleveengine: %s is not empty and holds no index", e.dir)
	default:
		if err := os.Remove(e.dir); err != nil {
			return nil, indexFeatures{}, fmt.Errorf("bleveengine: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(e.dir), 0o755); err != nil {
		return nil, indexFeatures{}, fmt.Errorf("bleveengine: %w", err)
	}
	idx, err := e.newIndex(e.dir)
	return idx, allFeatures, err
}

// scorchConfig is the runtime configuration of the scorch index. The nap
// is always given: bleve stores an index's creation config and takes it
// again at open unless the runtime config overrides it.
func (e *Engine) scorchConfig() map[string]any {
	return map[string]any{
		"scorchPersisterOptions": map[string]any{"PersisterNapTimeMSec": int(e.opts.PersistNap / time.Millisecond)},
		// Bleve's merge planner counts every segment smaller than
		// FloorSegmentSize (default 2,000 documents) as that size, so the
		// small segments of a steady stream of small batches all sit in one
		// tier and are merged again and again. With a floor of 100 the first
		// tier holds segments of up to 100 documents and each document is
		// rewritten fewer times: in the ingest benchmark (20,000 small
		// uploads, services/search/bench) the search process's CPU per
		// document fell from 2.99–3.04 to 2.12–2.15 ms, and other searches
		// during the load got faster too (p50 15 -> 10 ms).
		"scorchMergePlanOptions": map[string]any{"FloorSegmentSize": mergeFloorSegmentSize},
	}
}

// mergeFloorSegmentSize is the merge planner's floor segment size (in
// documents); see scorchConfig.
const mergeFloorSegmentSize = 100

func (e *Engine) newIndex(dir string) (bleve.Index, error) {
	m := bleve.NewIndexMapping()
	// Documents are built field by field (Batch.IndexAdvanced), so the
	// mapping only records the scoring model; searches set it themselves.
	m.ScoringModel = index.BM25Scoring
	var (
		idx bleve.Index
		err error
	)
	if dir == "" {
		// Scorch without a path keeps its segments in memory (bleve's
		// NewMemOnly would use the slower upsidedown index instead).
		idx, err = bleve.NewUsing("", m, scorch.Name, scorch.Name, nil)
	} else {
		idx, err = bleve.NewUsing(dir, m, scorch.Name, scorch.Name, e.scorchConfig())
	}
	if err != nil {
		return nil, fmt.Errorf("bleveengine: create index: %w", err)
	}
	if err := idx.SetInternal(formatKey, []byte(format)); err != nil {
		_ = idx.Close()
		return nil, fmt.Errorf("bleveengine: create index: %w", err)
	}
	return idx, nil
}

// loadRecords reads every document's record and vectors from the index
// and passes each to put. Vectors that known says the vector index holds
// already (by their stored bytes) are not decoded: the record has
// keepVectors set instead.
func loadRecords(idx bleve.Index, known func(id int64, s vecStamps) bool, put func(*record, *segmentDoc) error) error {
	adv, err := idx.Advanced()
	if err != nil {
		return err
	}
	r, err := adv.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	if snap, ok := r.(*scorch.IndexSnapshot); ok {
		return loadSegments(snap, known, put)
	}
	ids, err := r.DocIDReaderAll()
	if err != nil {
		return err
	}
	defer ids.Close()
	for {
		iid, err := ids.Next()
		if err != nil {
			return err
		}
		if iid == nil {
			return nil
		}
		ext, err := r.ExternalID(iid)
		if err != nil {
			return err
		}
		id, err := parseDocID(ext)
		if err != nil {
			return err
		}
		doc, err := r.Document(ext)
		if err != nil {
			return err
		}
		if doc == nil {
			continue
		}
		var rec record
		var recErr error
		found := false
		var cvec, mvec []float32
		var cdim int
		doc.VisitFields(func(f index.Field) {
			var err error
			switch f.Name() {
			case fieldRecord:
				rec, recErr = decodeRecord(id, f.Value())
				found = true
			case fieldVectors:
				cvec, mvec, err = decodeVectors(f.Value())
				cdim = len(cvec)
			case fieldPassages:
				if known(id, stampsOf(f.Value())) {
					rec.keepVectors = true
					return
				}
				cvec, cdim, mvec, err = decodePassageVectors(f.Value())
			}
			if err != nil && recErr == nil {
				recErr = err
			}
		})
		if recErr != nil {
			return fmt.Errorf("bleveengine: document %d: %w", id, recErr)
		}
		if !found {
			return fmt.Errorf("bleveengine: document %d: %w: no record", id, errCorrupt)
		}
		keep := rec.keepVectors
		rec.cvec, rec.cdim, rec.mvec, rec.keepVectors = cvec, cdim, mvec, keep
		if err := put(&rec, nil); err != nil {
			return err
		}
	}
}

// loadSegments is loadRecords over a scorch snapshot: each segment's live
// documents read by number, their stored fields visited in place (no
// lookup of each id in the id dictionary, no document objects), the
// segments decoded by GOMAXPROCS goroutines while put takes the records
// in turn. The workers hash a document's stored vectors (vecStamps)
// instead of copying them; the consumer decides whether the vector index
// holds them (known reads the vector index, which put changes) and reads
// them again from the segment, to decode, only when it does not.
func loadSegments(snap *scorch.IndexSnapshot, known func(id int64, s vecStamps) bool, put func(*record, *segmentDoc) error) error {
	segs := snap.Segments()
	type batch struct {
		docs []segmentDoc
		err  error
	}
	out := make(chan batch, 4)
	next := make(chan *scorch.SegmentSnapshot)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range min(len(segs), runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ss := range next {
				var docs []segmentDoc
				var err error
				it := ss.DocNumbersLive().Iterator()
				for it.HasNext() && err == nil {
					var d segmentDoc
					d, err = readSegmentDoc(ss, uint64(it.Next()))
					docs = append(docs, d)
					if len(docs) == 1024 || err != nil {
						select {
						case out <- batch{docs, err}:
						case <-done:
							return
						}
						docs = nil
					}
				}
				if len(docs) > 0 {
					select {
					case out <- batch{docs: docs}:
					case <-done:
						return
					}
				}
			}
		}()
	}
	go func() {
		defer close(next)
		for _, ss := range segs {
			select {
			case next <- ss:
			case <-done:
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		close(out)
	}()
	defer func() {
		// The reader is closed when this returns: the workers stop first.
		close(done)
		wg.Wait()
	}()
	for b := range out {
		if b.err != nil {
			return b.err
		}
		for i := range b.docs {
			d := &b.docs[i]
			r := &d.rec
			if d.passages {
				if known(r.id, d.stamps) {
					r.keepVectors = true
				} else if err := d.decodePassages(); err != nil {
					return fmt.Errorf("bleveengine: document %d: %w", r.id, err)
				}
			}
			if err := put(r, d); err != nil {
				return err
			}
		}
	}
	return nil
}

// segmentDoc is a document read by loadSegments: its record, and when it
// has a stored vectors field of format 3, the field's stamps and where to
// read it again.
type segmentDoc struct {
	rec      record
	passages bool
	stamps   vecStamps
	ss       *scorch.SegmentSnapshot
	num      uint64
}

// decodePassages reads the document's stored vectors field (format 3)
// again and decodes it into the record.
func (d *segmentDoc) decodePassages() error {
	var derr error
	found := false
	err := d.ss.VisitDocument(d.num, func(field string, _ byte, value []byte, _ []uint64) bool {
		if field == fieldPassages {
			d.rec.cvec, d.rec.cdim, d.rec.mvec, derr = decodePassageVectors(value)
			found = true
			return false
		}
		return true
	})
	switch {
	case err != nil:
		return err
	case derr != nil:
		return derr
	case !found:
		return fmt.Errorf("%w: the stored vectors went", errCorrupt)
	}
	return nil
}

// readSegmentDoc reads the record and vectors of document num of a
// segment; format 3 vectors are only hashed (segmentDoc).
func readSegmentDoc(ss *scorch.SegmentSnapshot, num uint64) (segmentDoc, error) {
	ext, err := ss.DocID(num)
	if err != nil {
		return segmentDoc{}, err
	}
	id, err := parseDocID(string(ext))
	if err != nil {
		return segmentDoc{}, err
	}
	d := segmentDoc{ss: ss, num: num}
	var recErr error
	found := false
	var cvec, mvec []float32
	var cdim int
	err = ss.VisitDocument(num, func(field string, _ byte, value []byte, _ []uint64) bool {
		var err error
		switch field {
		case fieldRecord:
			d.rec, recErr = decodeRecord(id, value)
			found = true
		case fieldVectors:
			cvec, mvec, err = decodeVectors(value)
			cdim = len(cvec)
		case fieldPassages:
			d.passages, d.stamps = true, stampsOf(value)
		}
		if err != nil && recErr == nil {
			recErr = err
		}
		return true
	})
	if err == nil {
		err = recErr
	}
	if err != nil {
		return segmentDoc{}, fmt.Errorf("bleveengine: document %d: %w", id, err)
	}
	if !found {
		return segmentDoc{}, fmt.Errorf("bleveengine: document %d: %w: no record", id, errCorrupt)
	}
	d.rec.cvec, d.rec.cdim, d.rec.mvec = cvec, cdim, mvec
	return d, nil
}

func docID(id int64) string { return strconv.FormatInt(id, 10) }

func parseDocID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bleveengine: bad document id %q", s)
	}
	return id, nil
}

// checkPassages refuses documents whose passage vectors cannot be stored
// (of different lengths), before anything is written; op names the call.
func checkPassages(op string, docs []engine.Document) error {
	for i := range docs {
		if _, _, err := flattenPassages(docs[i].ContentVectors); err != nil {
			return fmt.Errorf("bleveengine: %s: document %d: %w", op, docs[i].ID, err)
		}
	}
	return nil
}

// Upsert writes every document whose Rev is newer than the revision the
// engine holds (of a live document or of a tombstone). Within one call, the
// newest revision of an id wins and the others count as stale. Documents
// are written in batches, several at a time; when ctx ends or a batch
// fails, the batches not started are skipped and the result so far (the
// batches that completed) is returned with the error.
func (e *Engine) Upsert(ctx context.Context, docs []engine.Document) (engine.WriteResult, error) {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	idx, err := e.writer()
	if err != nil {
		return engine.WriteResult{}, err
	}
	if err := checkPassages("upsert", docs); err != nil {
		return engine.WriteResult{}, err
	}
	if err := e.growCommon(idx); err != nil {
		return engine.WriteResult{}, fmt.Errorf("bleveengine: upsert: %w", err)
	}
	if err := e.beforeContentWrite(idx); err != nil {
		return engine.WriteResult{}, fmt.Errorf("bleveengine: upsert: %w", err)
	}
	u := &upsert{e: e, idx: idx, docs: docs}
	u.choose()
	err = u.writeChunks(ctx, u.chunks())
	e.sinceCommon += u.res.Written
	if err == nil {
		err = e.maybeCheckpoint()
	}
	if err != nil {
		return u.res, fmt.Errorf("bleveengine: upsert: %w", err)
	}
	return u.res, nil
}

// upsert is the state of one Upsert.
type upsert struct {
	e    *Engine
	idx  bleve.Index
	docs []engine.Document
	// chosen maps each id to write to the index of its newest document;
	// order lists those ids in the order of their first document.
	chosen map[int64]int
	order  []int64

	resMu sync.Mutex
	res   engine.WriteResult
}

// choose picks, per id, the newest revision that beats the stored one.
func (u *upsert) choose() {
	u.chosen = make(map[int64]int, len(u.docs))
	u.order = make([]int64, 0, len(u.docs))
	u.e.mu.RLock()
	defer u.e.mu.RUnlock()
	for i := range u.docs {
		d := &u.docs[i]
		if r, ok := u.e.tab.get(d.ID); ok && (r.rev > d.Rev || r.rev == d.Rev && !d.Reread) {
			u.res.Stale++
			continue
		}
		if j, ok := u.chosen[d.ID]; ok {
			u.res.Stale++
			if u.docs[j].Rev >= d.Rev {
				continue
			}
		} else {
			u.order = append(u.order, d.ID)
		}
		u.chosen[d.ID] = i
	}
}

// chunks cuts the chosen ids into batches of Options.BatchSize.
func (u *upsert) chunks() [][]int64 {
	var out [][]int64
	size := u.e.opts.BatchSize
	for start := 0; start < len(u.order); start += size {
		out = append(out, u.order[start:min(start+size, len(u.order))])
	}
	return out
}

// writeChunks writes the batches with up to GOMAXPROCS goroutines:
// building a segment is single-threaded in bleve, and concurrent batches
// also share durable commits. Chunks hold distinct ids, so the order in
// which they land does not matter. It stops starting batches at the first
// error and returns it.
func (u *upsert) writeChunks(ctx context.Context, chunks [][]int64) error {
	var (
		wg      sync.WaitGroup
		errMu   sync.Mutex
		firstEr error
		next    = make(chan []int64)
	)
	failed := func() bool {
		errMu.Lock()
		defer errMu.Unlock()
		return firstEr != nil
	}
	for range min(len(chunks), runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ids := range next {
				if err := u.writeChunk(ctx, ids); err != nil {
					errMu.Lock()
					if firstEr == nil {
						firstEr = err
					}
					errMu.Unlock()
				}
			}
		}()
	}
	for _, c := range chunks {
		if failed() {
			break
		}
		next <- c
	}
	close(next)
	wg.Wait()
	return firstEr
}

// writeChunk writes one batch: the bleve documents (durable when Batch
// returns), then the vectors and the records.
func (u *upsert) writeChunk(ctx context.Context, ids []int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e := u.e
	b := u.idx.NewBatch()
	recs := make([]record, 0, len(ids))
	docs := make([]*document.Document, 0, len(ids))
	contents := make([]string, 0, len(ids))
	for _, id := range ids {
		d := &u.docs[u.chosen[id]]
		rec := recordFromDocument(d)
		rec.lens, rec.hasLens = e.an.fieldLengths(d.Content), true
		doc := e.document(d, &rec)
		if err := b.IndexAdvanced(doc); err != nil {
			return err
		}
		recs = append(recs, rec)
		docs = append(docs, doc)
		contents = append(contents, d.Content)
	}
	changes := e.replacedTerms(u.idx, ids, contents)
	e.beginBatch()
	err := u.idx.Batch(b)
	e.collectCommon(docs, err != nil)
	if err != nil {
		e.abandonBatch()
		return err
	}
	for i, ch := range changes {
		// Analysed by the index as it took the document.
		ch.new = contentTerms(docs[i])
		if ch.same {
			ch.old = ch.new
		}
	}
	if err := e.putRecords(recs, changes); err != nil {
		return err
	}
	u.resMu.Lock()
	u.res.Written += len(recs)
	u.resMu.Unlock()
	return nil
}

// beginBatch marks a batch about to be written to the bleve index, before
// the table takes its records (putRecords, or abandonBatch when it fails):
// until then, term counts read from the index are not cached (unput).
func (e *Engine) beginBatch() { e.unput.Add(1) }

// abandonBatch ends a batch whose records the table will not take. The
// index may hold some of it: the cached statistics views, which count
// what the table holds, are dropped.
func (e *Engine) abandonBatch() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.tab.stats.clear()
	e.unput.Add(-1)
}

// replacedTerms returns, for the documents of ids about to be written
// with contents, what the statistics views need to know of the content
// they replace (termChange.old; new is filled in once the index has
// analysed the new content). The stored content is read and analysed only
// for a live document some cached view counts terms of (wantsTerms);
// otherwise, or when reading fails, the old terms stay unknown and such a
// view drops its term counts when the write lands.
func (e *Engine) replacedTerms(idx bleve.Index, ids []int64, contents []string) []*termChange {
	out := make([]*termChange, len(ids))
	var r index.IndexReader
	defer func() {
		if r != nil {
			_ = r.Close()
		}
	}()
	for i, id := range ids {
		ch := &termChange{}
		out[i] = ch
		e.mu.RLock()
		cur, ok := e.tab.get(id)
		var old record
		if ok {
			old = *cur
		}
		want := ok && e.tab.stats.wantsTerms(&old)
		e.mu.RUnlock()
		switch {
		case !ok || old.deleted || old.hasLens && old.lens[lenExact] == 0:
			// Nothing of it is indexed (or visible).
			ch.old.known = true
			continue
		case !want:
			continue
		}
		if r == nil {
			adv, err := idx.Advanced()
			if err != nil {
				continue
			}
			if r, err = adv.Reader(); err != nil {
				r = nil
				continue
			}
		}
		content, err := storedContent(r, id)
		switch {
		case err != nil:
		case content == "":
			ch.old.known = true
		case content == contents[i]:
			ch.same = true
		default:
			ch.old = e.analyseContent(content)
		}
	}
	return out
}

// putRecords adds records written to the index to the vector index and
// the table: a search sees each document once both have it. changes[i]
// (nil, or changes nil: unknown) is the change of recs[i]'s terms for the
// cached statistics views. It ends the batch beginBatch started.
func (e *Engine) putRecords(recs []record, changes []*termChange) error {
	e.vecMu.Lock()
	defer e.vecMu.Unlock()
	staged := make([]docVecs, len(recs))
	for i := range recs {
		nv, err := e.stageVectors(&recs[i])
		if err != nil {
			e.abandonBatch()
			return err
		}
		staged[i] = nv
	}
	e.mu.Lock()
	e.tab.stats.startBatch(len(recs), len(e.tab.recs))
	for i := range recs {
		r := &recs[i]
		var ch *termChange
		if changes != nil {
			ch = changes[i]
		}
		slot := e.tab.put(*r, ch)
		e.vecs.bind(r.id, slot, staged[i], !r.deleted)
	}
	e.unput.Add(-1)
	e.mu.Unlock()
	e.vecs.log.flush()
	return e.vecs.syncErased()
}

// document builds the index document of d.
func (e *Engine) document(d *engine.Document, r *record) *document.Document {
	doc := document.NewDocument(docID(d.ID))
	for _, f := range e.contentFields(d.Content) {
		doc.AddField(f)
	}
	doc.AddField(document.NewTextFieldWithIndexingOptions(fieldRecord, nil, encodeRecord(r), index.StoreField))
	if r.cvec != nil || r.mvec != nil {
		doc.AddField(document.NewTextFieldWithIndexingOptions(fieldPassages, nil,
			encodePassageVectors(r.cvec, r.cdim, r.mvec), index.StoreField))
	}
	return doc
}

// contentFields returns the index fields of content (none when empty).
func (e *Engine) contentFields(content string) []*document.TextField {
	if content == "" {
		return nil
	}
	// Separate copies: analysis may lowercase a field's bytes in place.
	out := []*document.TextField{
		document.NewTextFieldCustom(fieldStem, nil, []byte(content),
			index.IndexField|index.IncludeTermVectors, e.an.stem),
		document.NewTextFieldCustom(fieldExact, nil, []byte(content),
			index.IndexField|index.IncludeTermVectors|index.StoreField, e.an.exact),
	}
	if e.features.grams {
		out = append(out, document.NewTextFieldCustom(fieldGrams, nil, []byte(content),
			index.IndexField|index.IncludeTermVectors, e.an.grams))
	}
	if e.features.pairs {
		// Only its documents are read (segPosSearcher's candidates):
		// no term vectors.
		out = append(out, document.NewTextFieldCustom(fieldPairs, nil, []byte(content),
			index.IndexField, e.an.pairs))
	}
	if c := e.common.Load(); e.features.window && c.window != nil {
		// The window pairs and the version of C they were made with
		// (window.go); only their documents are read.
		out = append(out,
			document.NewTextFieldCustom(fieldWindow, nil, []byte(content), index.IndexField, c.window),
			document.NewTextFieldCustom(fieldWindowVer, nil, []byte(c.marker), index.IndexField, markerAnalyzer))
	}
	return out
}

// analyseContent returns the terms the index holds for content, by
// analysing its fields as the index does.
func (e *Engine) analyseContent(content string) docTerms {
	t := docTerms{known: true, fields: map[string]index.TokenFrequencies{}}
	for _, f := range e.contentFields(content) {
		if n := f.Name(); n == fieldPairs || n == fieldWindow || n == fieldWindowVer {
			// Pairs are never scored: the statistics views do not count them.
			continue
		}
		f.Analyze()
		t.fields[f.Name()] = f.AnalyzedTokenFrequencies()
	}
	return t
}

// contentTerms returns the terms of doc's content fields, which the index
// analysed when it took doc (unknown if it did not, so left them nil).
func contentTerms(doc *document.Document) docTerms {
	t := docTerms{known: true, fields: map[string]index.TokenFrequencies{}}
	for _, f := range doc.Fields {
		switch f.Name() {
		case fieldStem, fieldExact, fieldGrams:
			tf := f.AnalyzedTokenFrequencies()
			if tf == nil {
				return docTerms{}
			}
			t.fields[f.Name()] = tf
		}
	}
	return t
}

// Delete removes document id unless the engine holds a newer revision than
// rev, and keeps a tombstone at rev so that an older Upsert arriving later
// does not bring the document back. Deleting an absent document records
// the tombstone too.
func (e *Engine) Delete(ctx context.Context, id, rev int64) error {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	idx, err := e.writer()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bleveengine: delete: %w", err)
	}
	e.mu.RLock()
	cur, ok := e.tab.get(id)
	skip := ok && (cur.rev > rev || cur.deleted && cur.rev >= rev)
	e.mu.RUnlock()
	if skip {
		return nil
	}
	tomb := record{id: id, rev: rev, deleted: true, hasLens: true}
	b := idx.NewBatch()
	doc := document.NewDocument(docID(id))
	doc.AddField(document.NewTextFieldWithIndexingOptions(fieldRecord, nil, encodeRecord(&tomb), index.StoreField))
	if err := b.IndexAdvanced(doc); err != nil {
		return fmt.Errorf("bleveengine: delete: %w", err)
	}
	// A tombstone has no terms; those of the content it replaces are
	// read when a cached view counts them.
	changes := e.replacedTerms(idx, []int64{id}, []string{""})
	changes[0].new = docTerms{known: true}
	e.beginBatch()
	if err := idx.Batch(b); err != nil {
		e.abandonBatch()
		return fmt.Errorf("bleveengine: delete: %w", err)
	}
	if err := e.putRecords([]record{tomb}, changes); err != nil {
		return fmt.Errorf("bleveengine: delete: %w", err)
	}
	return nil
}

// writer returns the index for a writer holding writeMu (which keeps Reset
// from swapping it).
func (e *Engine) writer() (bleve.Index, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return nil, engine.ErrClosed
	}
	return e.idx, nil
}

// Revision returns the stored revision of a live document.
func (e *Engine) Revision(ctx context.Context, id int64) (int64, bool, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return 0, false, engine.ErrClosed
	}
	r, ok := e.tab.get(id)
	if !ok || r.deleted {
		return 0, false, nil
	}
	return r.rev, true, nil
}

// Revisions returns every live document with its stored revision.
func (e *Engine) Revisions(ctx context.Context) (map[int64]int64, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return nil, engine.ErrClosed
	}
	out := make(map[int64]int64, e.tab.live)
	for i := range e.tab.recs {
		if r := &e.tab.recs[i]; !r.deleted {
			out[r.id] = r.rev
		}
	}
	return out, ctx.Err()
}

// Count returns the number of live documents.
func (e *Engine) Count(ctx context.Context) (int64, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return 0, engine.ErrClosed
	}
	return int64(e.tab.live), nil
}

// Reset removes every document and tombstone, and the recorded embedder
// (an empty index holds no vectors).
func (e *Engine) Reset(ctx context.Context) error {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return engine.ErrClosed
	}
	e.vecs.close()
	if err := e.idx.Close(); err != nil {
		return fmt.Errorf("bleveengine: reset: %w", err)
	}
	if !e.opts.InMemory {
		if err := os.RemoveAll(e.dir); err != nil {
			e.closed = true
			return fmt.Errorf("bleveengine: reset: %w", err)
		}
	}
	idx, features, err := e.openIndex()
	if err != nil {
		e.closed = true
		return fmt.Errorf("bleveengine: reset: %w", err)
	}
	vecs, err := e.openVectors()
	if err != nil {
		_ = idx.Close()
		e.closed = true
		return fmt.Errorf("bleveengine: reset: %w", err)
	}
	// The rebuilt index starts with the current common terms (reindex
	// writes every document again, each with all of C's window pairs).
	common := e.common.Load()
	if !features.window {
		common = newCommonSet(nil)
	} else if common.version() > 0 {
		if err := writeCommon(idx, common); err != nil {
			vecs.close()
			_ = idx.Close()
			e.closed = true
			return fmt.Errorf("bleveengine: reset: %w", err)
		}
	}
	e.common.Store(common)
	// The new index is empty: no term can have reached the count yet.
	e.candidates.take()
	e.commonChecked, e.sinceCommon = false, 0
	e.vecs = vecs
	e.idx, e.features, e.tab, e.slots, e.embedder = idx, features, newTable(), e.newSlots(), nil
	return nil
}

// Close releases the engine, after the writes and searches in progress.
// Later calls return engine.ErrClosed; closing twice is not an error.
func (e *Engine) Close() error {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	// The last look for common terms (it reads the table: before mu).
	var ccerr error
	if idx, err := e.writer(); err == nil {
		if ccerr = e.closeCommon(idx); ccerr != nil {
			ccerr = fmt.Errorf("bleveengine: close: %w", ccerr)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	// A checkpoint, so that the next start reads the vector index
	// instead of adding every vector again.
	cerr := e.vecs.checkpoint()
	e.vecs.close()
	return errors.Join(ccerr, cerr, e.idx.Close())
}
