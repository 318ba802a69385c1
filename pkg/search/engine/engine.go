// Package engine is the contract between docrepo's search service and its
// search engines: the embedded engine (bleve plus a vector index of its own) and
// OpenSearch. Both execute the same parsed query (pkg/search/dsl) with the
// semantics of docs/design.md §6, so that they answer identically.
//
// The indexer writes Documents; the search service runs Requests. Writes
// are idempotent and order-safe: a document is written only when its Rev is
// newer than the revision the engine holds, so replayed or reordered events
// never resurrect old state.
package engine

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/search/dsl"
)

// Document is one document as search sees it.
type Document struct {
	ID  int64
	Rev int64
	// GroupIDs are the groups that may see the document (the visibility
	// pre-filter of every search).
	GroupIDs []int64
	// FolderIDs are the folders the document is assigned to (the
	// filesbelongto field).
	FolderIDs []int64

	// Metadata fields of docs/api.md §2.8. A nil pointer means the document lacks
	// the field (ne/nin match it; eq never does).
	Description     *string
	DocNumber       *string
	DocType         *string
	DocStatus       *string
	ReferenceNumber *string
	FromEntity      *string
	ToEntity        *string
	EntryPerson     *string
	RevNumber       *string
	Subdoctype      *string
	Date            *time.Time
	EntryDate       *time.Time
	Privileged      bool
	IsLocked        bool

	// Content is the extracted text of the document's current file.
	Content string
	// ContentVectors embed Content as overlapping passages
	// (pkg/embed/passage), in order, all of the same length: the
	// document's distance to a query vector is that of its nearest
	// passage, and it is one neighbour however many passages it has.
	// MetadataVector embeds the canonical metadata text. Either may be
	// nil (then the document is never a nearest neighbour for that
	// target).
	ContentVectors [][]float32
	MetadataVector []float32
	// VectorsPending marks a document written before its content vectors
	// (ContentVectors is then nil): the indexer's embedding stage gives
	// them later (VectorStage). Until then the document is found by full
	// text and metadata, and by its metadata vector, but never as a
	// content neighbour.
	VectorsPending bool
	// Reread replaces the stored document also when it holds this very
	// revision: the revision's file was indexed without its text (the
	// download failed) and has now been read. Never an older revision.
	Reread bool
}

// Request is one search to execute.
type Request struct {
	Query *dsl.Query
	Plan  dsl.Plan
	// GroupIDs of the caller: only documents sharing one are eligible,
	// in every mode and in Total. Unrestricted callers see everything.
	GroupIDs     []int64
	Unrestricted bool
	// QueryVector is the embedding of Plan.Vector's query text (nil
	// without a vector clause). The search service embeds it with the same
	// embedder the indexer used for Plan.Vector.Target.
	QueryVector []float32
	// Rerank, when not nil, is a second stage for a vector-only search's
	// nearest documents, by their content (the use embedder's, for short
	// queries). Both engines apply it (Rerank.Distance); PrepareVector
	// sets it.
	Rerank *Rerank
}

// Rerank re-scores a vector-only search's nearest documents: the first
// Depth of them (nearest first) score their cosine plus Weight times
// Score(their content), Score in [−1, 1], and stay ahead of the others,
// whose order is kept. Hits then score 1/(1+d²) of the distance that
// cosine gives, d² = 2 − 2·cosine (+ 4·Weight past Depth).
type Rerank struct {
	Depth  int
	Weight float64
	Score  func(content string) float64
}

// Hit is one result.
type Hit struct {
	ID int64
	// Score is BM25 in FTS modes, 1/(1+d²) in vector-only modes, nil when
	// nothing ranks (metadata-only and no-where modes).
	Score *float64
	// Highlights are up to 3 snippets of at most the requested visible
	// length, matched terms in <b>...</b>, all other text HTML-escaped. Nil
	// unless the query asked for highlights and has an FTS clause.
	Highlights []string
	// Fields holds the selected metadata fields (dsl field name → value:
	// string, int64, bool, time.Time, []int64 for filesbelongto, or nil when
	// the document lacks the field).
	Fields map[string]any
}

// Result is one page of hits and the total number of matches.
type Result struct {
	Total int64
	Hits  []Hit
}

// WriteResult says what an Upsert did with each document.
type WriteResult struct {
	// Written counts documents stored; Stale counts documents skipped
	// because the engine already held the same or a newer revision.
	Written int
	Stale   int
}

// Engine is a search engine backend. Implementations are safe for
// concurrent use.
type Engine interface {
	// Upsert writes each document whose Rev is newer than the stored one
	// (or, with Reread, the same).
	Upsert(ctx context.Context, docs []Document) (WriteResult, error)
	// Delete removes a document unless the engine holds a newer revision
	// than rev. Deleting an absent document is not an error.
	Delete(ctx context.Context, id, rev int64) error
	// Revision returns the stored revision of a document (false when absent).
	Revision(ctx context.Context, id int64) (int64, bool, error)
	// Revisions returns every document the engine holds with its stored
	// revision (for the anti-entropy pass that compares the index with
	// the documents of record).
	Revisions(ctx context.Context) (map[int64]int64, error)
	// Search executes a request. It honours ctx's deadline and then returns
	// an error wrapping context.DeadlineExceeded.
	Search(ctx context.Context, req Request) (Result, error)
	// Count returns the number of documents stored.
	Count(ctx context.Context) (int64, error)
	// Reset removes every document (for a full reindex).
	Reset(ctx context.Context) error
	// Embedder returns the identity of the embedder whose vectors the
	// index holds, as SetEmbedder recorded it; ok is false when none is
	// recorded (a new or reset index, or one written before identities
	// were recorded). Vectors of different embedders are not comparable:
	// the indexer never writes vectors into an index recording another
	// embedder, and the services refuse to start on one (pkg/indexing
	// CheckEmbedder).
	Embedder(ctx context.Context) (id embed.Identity, ok bool, err error)
	// SetEmbedder records the identity of the embedder whose vectors the
	// index holds.
	SetEmbedder(ctx context.Context, id embed.Identity) error
	// Close releases the engine.
	Close() error
}

// VectorStage is implemented by engines that take a document's content
// vectors after the document itself, so that the indexer makes text
// searchable first and embeds it in a bounded background stage
// (pkg/indexing). The embedded engine implements it; OpenSearch does not
// (its external versions allow no update of a document at the same
// revision that could not also resurrect a deleted one), and the indexer
// embeds before writing there.
type VectorStage interface {
	// PendingVectors returns up to limit live documents written with
	// VectorsPending and not given their vectors since (ID, Rev and
	// Content set), and how many there are in all.
	PendingVectors(ctx context.Context, limit int) (docs []Document, total int, err error)
	// SetContentVectors gives documents their ContentVectors: each one
	// the engine holds at exactly its Rev, with vectors pending, is
	// written (it is no longer pending); the others (since changed,
	// deleted, or given vectors already) count as Stale.
	SetContentVectors(ctx context.Context, docs []Document) (WriteResult, error)
}

// DocFreqs is implemented by engines that can say how common a query's
// words are among the documents a caller can see: the search service
// weights a query vector's words by their rarity with it (pkg/embed,
// WordStats). Both engines implement it; for another the search service
// embeds query vectors unweighted.
type DocFreqs interface {
	// DocFreqs returns, for each word as full-text search analyses a bare
	// word (stemmed), how many of the documents req's caller can see
	// (GroupIDs, Unrestricted) contain it in their content, and how many
	// documents with content the caller can see in all. A word that
	// analyses to nothing (a stop word) counts 0. Nil freqs (and no
	// error): the engine cannot say.
	DocFreqs(ctx context.Context, req Request, words []string) (freqs []int64, docs int64, err error)
}

// VectorMean is implemented by engines that can give the mean of the
// content vectors they hold of a length: the search service shifts a use
// query away from it (pkg/embed, EmbedQueriesWithCorpus), taking off each
// passage's similarity to the corpus as a whole (hubness). Both engines
// implement it.
type VectorMean interface {
	// MeanContentVector returns the mean of the live content vectors of
	// length dim of the documents req's caller can see (GroupIDs,
	// Unrestricted; every such document's passages; nil when there are
	// none), so that no score depends on documents the caller cannot see.
	MeanContentVector(ctx context.Context, req Request, dim int) ([]float32, error)
}

// SortedIDs returns ids sorted, without duplicates (nil for none): how both
// engines store group and folder ids, so that filesbelongto comes back in a
// stable order.
func SortedIDs(ids []int64) []int64 {
	if len(ids) == 0 {
		return nil
	}
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// ErrClosed is returned by an engine used after Close.
var ErrClosed = errors.New("engine: closed")

// MetadataText is the canonical text of a document's metadata that the
// metadata vector target embeds: "field: value" lines in spec order, absent
// fields left out. The indexer and tests must use this one function.
func MetadataText(d *Document) string {
	var b []byte
	add := func(name string, v *string) {
		if v != nil && *v != "" {
			b = append(b, name...)
			b = append(b, ": "...)
			b = append(b, *v...)
			b = append(b, '\n')
		}
	}
	add("description", d.Description)
	add("doc_type", d.DocType)
	add("doc_status", d.DocStatus)
	add("doc_number", d.DocNumber)
	add("reference_number", d.ReferenceNumber)
	add("from_entity", d.FromEntity)
	add("to_entity", d.ToEntity)
	add("rev_number", d.RevNumber)
	add("subdoctype", d.Subdoctype)
	return string(b)
}
