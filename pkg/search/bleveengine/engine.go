package bleveengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
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
// passage vectors.
const (
	format       = "3"
	formatGrams  = "2"
	formatNoGram = "1"
)

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

	mu       sync.RWMutex // guards the fields below; Search holds it shared
	idx      bleve.Index
	grams    bool // idx has the common grams field (format 2 and later)
	tab      *table
	slots    *slotCache // of tab
	embedder *embed.Identity
	closed   bool
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
	return &table{slots: make(map[int64]int32)}
}

func (t *table) get(id int64) (*record, bool) {
	s, ok := t.slots[id]
	if !ok {
		return nil, false
	}
	return &t.recs[s], true
}

func (t *table) put(r record) {
	r.cnorms = nil
	for i := range r.passages() {
		r.cnorms = append(r.cnorms, sqNorm(r.passage(i)))
	}
	r.mnorm = sqNorm(r.mvec)
	if s, ok := t.slots[r.id]; ok {
		old := &t.recs[s]
		t.account(old, -1)
		*old = r
	} else {
		t.slots[r.id] = int32(len(t.recs))
		t.recs = append(t.recs, r)
	}
	t.account(&r, 1)
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
	idx, grams, err := e.openIndex()
	if err != nil {
		return nil, err
	}
	tab, err := loadTable(idx)
	if err != nil {
		_ = idx.Close()
		return nil, err
	}
	emb, err := readEmbedder(idx)
	if err != nil {
		_ = idx.Close()
		return nil, fmt.Errorf("bleveengine: open %s: %w", dir, err)
	}
	e.idx, e.grams, e.tab, e.slots, e.embedder = idx, grams, tab, newSlotCache(), emb
	return e, nil
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

// openIndex opens or creates the index and reports whether it has the
// common grams field.
func (e *Engine) openIndex() (bleve.Index, bool, error) {
	if e.opts.InMemory {
		idx, err := e.newIndex("")
		return idx, true, err
	}
	if e.dir == "" {
		return nil, false, errors.New("bleveengine: no directory")
	}
	if _, err := os.Stat(filepath.Join(e.dir, "index_meta.json")); err == nil {
		idx, err := bleve.OpenUsing(e.dir, e.scorchConfig())
		if err != nil {
			return nil, false, fmt.Errorf("bleveengine: open %s: %w", e.dir, err)
		}
		got, err := idx.GetInternal(formatKey)
		switch {
		case err != nil:
		case string(got) == formatGrams:
			// Format 3 reads format 2 documents; new ones get passages.
			err = idx.SetInternal(formatKey, []byte(format))
		case string(got) != format && string(got) != formatNoGram:
			err = fmt.Errorf("format %q, want %q: rebuild the index", got, format)
		}
		if err != nil {
			_ = idx.Close()
			return nil, false, fmt.Errorf("bleveengine: open %s: %w", e.dir, err)
		}
		return idx, string(got) != formatNoGram, nil
	}
	entries, err := os.ReadDir(e.dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, false, fmt.Errorf("bleveengine: %w", err)
	case len(entries) > 0:
		return nil, false, fmt.Errorf("bleveengine: %s is not empty and holds no index", e.dir)
	default:
		if err := os.Remove(e.dir); err != nil {
			return nil, false, fmt.Errorf("bleveengine: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(e.dir), 0o755); err != nil {
		return nil, false, fmt.Errorf("bleveengine: %w", err)
	}
	idx, err := e.newIndex(e.dir)
	return idx, true, err
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

// loadTable reads every document's record and vectors from the index.
func loadTable(idx bleve.Index) (*table, error) {
	adv, err := idx.Advanced()
	if err != nil {
		return nil, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	ids, err := r.DocIDReaderAll()
	if err != nil {
		return nil, err
	}
	defer ids.Close()
	tab := newTable()
	for {
		iid, err := ids.Next()
		if err != nil {
			return nil, err
		}
		if iid == nil {
			break
		}
		ext, err := r.ExternalID(iid)
		if err != nil {
			return nil, err
		}
		id, err := parseDocID(ext)
		if err != nil {
			return nil, err
		}
		doc, err := r.Document(ext)
		if err != nil {
			return nil, err
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
				cvec, cdim, mvec, err = decodePassageVectors(f.Value())
			}
			if err != nil && recErr == nil {
				recErr = err
			}
		})
		if recErr != nil {
			return nil, fmt.Errorf("bleveengine: document %d: %w", id, recErr)
		}
		if !found {
			return nil, fmt.Errorf("bleveengine: document %d: %w: no record", id, errCorrupt)
		}
		rec.cvec, rec.cdim, rec.mvec = cvec, cdim, mvec
		tab.put(rec)
	}
	return tab, nil
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
	var res engine.WriteResult
	idx, err := e.writer()
	if err != nil {
		return res, err
	}
	if err := checkPassages("upsert", docs); err != nil {
		return res, err
	}

	// Pick, per id, the newest revision that beats the stored one.
	chosen := make(map[int64]int, len(docs))
	order := make([]int64, 0, len(docs))
	e.mu.RLock()
	for i := range docs {
		d := &docs[i]
		if r, ok := e.tab.get(d.ID); ok && (r.rev > d.Rev || r.rev == d.Rev && !d.Reread) {
			res.Stale++
			continue
		}
		if j, ok := chosen[d.ID]; ok {
			res.Stale++
			if docs[j].Rev >= d.Rev {
				continue
			}
		} else {
			order = append(order, d.ID)
		}
		chosen[d.ID] = i
	}
	e.mu.RUnlock()

	// Batches are built and committed by up to GOMAXPROCS goroutines:
	// building a segment is single-threaded in bleve, and concurrent
	// batches also share durable commits. Chunks hold distinct ids, so
	// the order in which they land does not matter.
	var chunks [][]int64
	for start := 0; start < len(order); start += e.opts.BatchSize {
		chunks = append(chunks, order[start:min(start+e.opts.BatchSize, len(order))])
	}
	var (
		wg      sync.WaitGroup
		resMu   sync.Mutex
		firstEr error
		next    = make(chan []int64)
	)
	write := func(ids []int64) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		b := idx.NewBatch()
		recs := make([]record, 0, len(ids))
		for _, id := range ids {
			d := &docs[chosen[id]]
			rec := recordFromDocument(d)
			rec.lens, rec.hasLens = e.an.fieldLengths(d.Content), true
			if err := b.IndexAdvanced(e.document(d, &rec)); err != nil {
				return err
			}
			recs = append(recs, rec)
		}
		if err := idx.Batch(b); err != nil {
			return err
		}
		e.mu.Lock()
		for _, r := range recs {
			e.tab.put(r)
		}
		e.mu.Unlock()
		resMu.Lock()
		res.Written += len(recs)
		resMu.Unlock()
		return nil
	}
	for range min(len(chunks), runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ids := range next {
				if err := write(ids); err != nil {
					resMu.Lock()
					if firstEr == nil {
						firstEr = err
					}
					resMu.Unlock()
				}
			}
		}()
	}
	for _, c := range chunks {
		resMu.Lock()
		failed := firstEr != nil
		resMu.Unlock()
		if failed {
			break
		}
		next <- c
	}
	close(next)
	wg.Wait()
	if firstEr != nil {
		return res, fmt.Errorf("bleveengine: upsert: %w", firstEr)
	}
	return res, nil
}

// document builds the index document of d.
func (e *Engine) document(d *engine.Document, r *record) *document.Document {
	doc := document.NewDocument(docID(d.ID))
	if d.Content != "" {
		// Separate copies: analysis may lowercase a field's bytes in place.
		doc.AddField(document.NewTextFieldCustom(fieldStem, nil, []byte(d.Content),
			index.IndexField|index.IncludeTermVectors, e.an.stem))
		doc.AddField(document.NewTextFieldCustom(fieldExact, nil, []byte(d.Content),
			index.IndexField|index.IncludeTermVectors|index.StoreField, e.an.exact))
		if e.grams {
			doc.AddField(document.NewTextFieldCustom(fieldGrams, nil, []byte(d.Content),
				index.IndexField|index.IncludeTermVectors, e.an.grams))
		}
	}
	doc.AddField(document.NewTextFieldWithIndexingOptions(fieldRecord, nil, encodeRecord(r), index.StoreField))
	if r.cvec != nil || r.mvec != nil {
		doc.AddField(document.NewTextFieldWithIndexingOptions(fieldPassages, nil,
			encodePassageVectors(r.cvec, r.cdim, r.mvec), index.StoreField))
	}
	return doc
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
	if err := idx.Batch(b); err != nil {
		return fmt.Errorf("bleveengine: delete: %w", err)
	}
	e.mu.Lock()
	e.tab.put(tomb)
	e.mu.Unlock()
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
	if err := e.idx.Close(); err != nil {
		return fmt.Errorf("bleveengine: reset: %w", err)
	}
	if !e.opts.InMemory {
		if err := os.RemoveAll(e.dir); err != nil {
			e.closed = true
			return fmt.Errorf("bleveengine: reset: %w", err)
		}
	}
	idx, grams, err := e.openIndex()
	if err != nil {
		e.closed = true
		return fmt.Errorf("bleveengine: reset: %w", err)
	}
	e.idx, e.grams, e.tab, e.slots, e.embedder = idx, grams, newTable(), newSlotCache(), nil
	return nil
}

// Close releases the engine, after the writes and searches in progress.
// Later calls return engine.ErrClosed; closing twice is not an error.
func (e *Engine) Close() error {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	return e.idx.Close()
}
