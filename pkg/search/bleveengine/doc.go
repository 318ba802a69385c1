// Package bleveengine is docrepo's embedded search engine (docs/design.md §6): an
// engine.Engine built on bleve v2 (scorch) for the document content and an
// in-memory table for everything else (metadata, groups, revisions,
// vectors). It needs no external service, persists to one directory and
// survives restarts; Open(dir, Options{InMemory: true}) gives a throwaway
// engine for tests.
//
// # Storage
//
// Each document is one bleve document whose id is the decimal document id:
//
//   - "s": the content, stemmed (see Analysis), indexed with term vectors;
//   - "x": the content, exact (lowercased), indexed with term vectors and
//     stored (highlights are built from it);
//   - "g": the content's common grams, indexed with term vectors;
//   - "p": every pair of adjacent exact tokens ("annual report"), indexed
//     without term vectors (format 4; an index of format 3 or older has
//     none until it is rebuilt: its phrases are found by positions only);
//   - "m": the metadata record (revision, groups, folders, metadata
//     fields, the content's token counts), stored only, in a small binary
//     encoding;
//   - "w": the content's passage vectors and the metadata vector
//     (float32), stored only. (Format 2 indexes kept one content vector
//     in "v"; it is still read, as one passage.)
//
// The internal key docrepo.bleveengine.embedder records which embedder's
// vectors the index holds (SetEmbedder; Reset clears it).
//
// A deleted document is replaced by a tombstone: a bleve document with only
// its record (id and revision), marked deleted, at the delete's revision:
// no content, no vectors. Tombstones are kept
// until Reset so that an older Upsert arriving after a Delete is recognised
// as stale; they never match and do not count in BM25's statistics.
//
// Open reads every record back into memory (a table of slots keyed by
// id), so filters, sorting, selecting and visibility never touch the
// index. Vectors are not kept in the records but in the vector index
// (vectors.go, vecfile.go; pkg/search/ann), in the directory "vectors"
// beside bleve's files: per target and dimension, the full-precision
// vectors in a memory-mapped file (file-backed memory: 4·dimensions bytes
// per vector, read when re-ranking), int8 codes with a scale per vector
// in memory (dimensions + 8 bytes), and, for embedders whose queries are
// dense, an HNSW graph (about 34 links of 4 bytes per vector on layer 0;
// a process that writes also keeps those links' distances, 4 bytes each,
// for the lists its writes reach, in pages of 64 nodes: up to 128 B more
// per vector after many writes, none after Open).
// A small document with a 768-dimension hash content passage and
// metadata vector costs about 1.6 KB of heap for its vectors and 6 KB of
// file. The vector index is checkpointed every 50,000 vectors and at
// Close, logs its changes in between (vlog.go: each appended vector with
// the record of its graph Add, each document's binding), and is matched
// to the bleve index at Open: the log is replayed over the checkpoint
// (links copied, no distance computed) up to its first torn record, and
// documents written or changed after what it replayed get their vectors
// again from their stored field, so a crash (kill -9) costs a replay, not
// a rebuild of the graph; a missing or damaged checkpoint rebuilds the
// vector index from the bleve index.
// Documents written again with the same vectors (a metadata change) keep
// them; vectors a document loses — replaced by new content, or all of
// them when it is deleted (to the trash or purged) — are erased:
// overwritten with zeros in the file and the codes (their numbers and
// graph nodes stay, owned by no document, until the index is rebuilt), so
// nothing derived from a deleted document's text stays in the vector
// index. A restore from trash embeds the document again. Vectors of
// tombstones the last checkpoint still lists (a crash between a delete
// and its erasure) are erased at open.
//
// Writes: one writer at a time (Upsert, Delete, Reset). Upsert keeps, per
// id, the newest revision newer than the stored one (of a document or a
// tombstone), writes in bleve batches (Options.BatchSize) and returns once
// they are durable (scorch persists before Batch returns), then updates the
// table. Each call costs at least one durable commit (a few milliseconds),
// so bulk writers should pass many documents per call. Searches run
// concurrently with writes; a search sees a write once both the index and
// the table have it (a document in the index but not yet in the table is
// skipped).
//
// Why metadata lives in memory rather than in bleve fields: contains and
// startswith on high-cardinality fields (reference numbers, descriptions)
// would expand to tens of thousands of terms per query; sorting on stored
// values, the vector scan's pre-filter (which needs every eligible
// document, not a page) and exact ne/nin/not semantics over missing fields
// are all simpler and faster as a scan of a compact table (100,000
// documents in a few milliseconds) than as index queries. bleve does what
// only an inverted index does well: the full text.
//
// # Analysis
//
// The content is segmented into words by Unicode rules (UAX #29). The
// stemmed field then drops English possessives ('s), lowercases, removes
// Lucene's 33 English stop words and applies the Porter stemmer: the
// analysis of OpenSearch's "english" analyzer, so both engines match the
// same words. The exact field only lowercases. The grams field holds the
// common grams of the exact tokens: each adjacent pair with a stop word
// ("of the"), so phrases with very common words read one short posting
// list instead of two huge ones (an index of format 1, written before the
// grams and the per-document lengths existed, still opens: its phrases are
// checked on exact tokens and its scores are not length-normalised until
// it is rebuilt).
//
// How fts nodes are matched (the AST is never re-parsed; no query string
// parser sees user text):
//
//   - bare word: its stemmed tokens on the stemmed field. A word the
//     analyzer splits into several tokens (e-mail, COVID-19) is a phrase of
//     those tokens, stop-word gaps kept.
//   - phrase: its exact tokens, adjacent and in order, on the exact field.
//     With the pair field, a two-word phrase matches the documents holding
//     its pair (no position is read; the terms' frequencies and norms are,
//     to score), and a longer one checks positions only in the documents
//     holding all its pairs.
//   - prefix: the exact tokens of the prefix text, the last one expanded to
//     every indexed exact token starting with it ("e-ma*" is the phrase "e"
//     followed by a token starting with "ma"). At most
//     Options.MaxPrefixTerms expansions (default 10,000) for all the
//     prefixes of a query together (so 500 short prefixes ORed together
//     cannot cost seconds of CPU): more fails the search with a *dsl.Error
//     (a 400) asking for fewer or longer prefixes, rather than silently
//     matching a subset. (OpenSearch rewrites prefixes itself and has no
//     such limit.)
//   - NEAR: the exact tokens of each clause (a clause of several tokens is a
//     phrase); a document matches when one occurrence of every clause lies
//     in a window with at most n other tokens between the first and the
//     last, in any order: maxEnd − minStart − Σ clause lengths ≤ n,
//     Lucene's unordered span_near rule, including its quirk that
//     occurrences may overlap (*N"a a" matches a single "a"). It is a bleve
//     searcher over term positions (a leapfrog conjunction of the clause
//     terms' postings read with their positions, each candidate checked
//     with a sweep over the positions), so totals and paging are exact.
//     Clauses of several words are looked for only where their pairs are;
//     one clause repeated (*N"a a", which matches every "a") reads no
//     positions.
//     Phrases use the same searcher (one clause), which is leaner than
//     bleve's phrase searcher.
//   - exclusion, OR and the implicit AND: bleve's boolean and conjunction
//     searchers and the engine's own disjunction (which sums scores).
//
// Stop words: a word the stemmed analysis drops (a stop word, or
// punctuation) is left out of its conjunction or OR group, so "the annual
// report" means annual AND report, and an excluded stop word excludes
// nothing. When that leaves the whole fts query without any term, it is
// analysed again with bare words matched exactly (lowercased, unstemmed,
// stop words kept): "the" finds the documents containing "the", "to be or
// not to be" those containing all of those words. A query of punctuation
// only matches nothing.
//
// # Scoring
//
// fts clauses score with Lucene's BM25 (k1 1.2, b 0.75, OpenSearch's
// defaults), computed by the engine's own term searcher from the postings'
// frequencies and norms: idf = ln(1 + (N − n + 0.5)/(n + 0.5)), summed
// over the terms a document matches, without bleve's coordination factor
// or query normalisation. N and the average field length come from the
// table (live documents with content, their token counts kept per
// document), not from bleve, whose statistics count tombstones and use the
// number of distinct terms per segment as the field length, so its scores
// drift as segments merge. Phrases and NEAR score the sum of their terms
// (common grams count as terms); OR sums the alternatives that match; a
// prefix (with or without leading words) scores a constant 1 per match,
// like Lucene's constant-score prefix. The score of a document is the sum
// of the scores of the fts clauses of the where tree it matched outside
// not; a document matching only through a metadata branch of an or scores
// 0. On SciFact (title and text, queries OR-joined) it reaches nDCG@10
// 0.681 and Recall@100 0.918 (TestSciFactRankingMeetsBM25Targets; BEIR's Elasticsearch BM25:
// 0.665, Anserini: 0.679).
//
// # Execution
//
// Every search is evaluated exactly, never by filtering a top-k:
//
//  1. The eligible documents are the live ones visible to the caller (a
//     group in common, or unrestricted) that pass Plan.Filters.
//  2. With a vector clause: the vector_k nearest eligible documents by
//     squared L2 distance (ties by id; documents without a vector of the
//     target's dimension are never neighbours). A document's content
//     distance is that of its nearest passage, and it is one candidate
//     however many passages it has, so k counts documents. Candidates come
//     from the vector index (nearest.go): a dense query walks the HNSW
//     graph with the eligibility applied during the walk, keeping each
//     document's nearest passage until 4k eligible documents are found,
//     unless scanning the eligible documents' vectors costs less than a
//     walk that wide (estimated from a sample: the share the filter
//     admits and their passages per document);
//     a sparse query (at most a quarter of its components non-zero: the
//     hash embedder's short queries), a set without a graph, or a
//     selective filter scans the int8 codes of the eligible documents
//     exactly, in parallel parts (the codes of the hash embedder's sets
//     laid out by dimension, for its sparse queries; every other
//     embedder's by vector, so that a filtered scan reads only the
//     eligible vectors: codesLayout). The 2k+32 best candidates by quantised
//     distance (more when documents have several passages among them) are
//     then re-ranked by their exact distance from the full-precision
//     vectors, so the result is exact for the scan and ties break by id.
//     Recall@10 against an exact float64 scan, with the visibility filter
//     admitting all, 10 % or 1 % of the documents, is measured by
//     BenchmarkVectorScale (docs/benchmarks.md).
//  3. Each fts clause runs as a bleve searcher over the whole index (over
//     the k nearest only, with a vector clause) and yields every matching
//     document with its BM25 score. Matches are mapped to table slots
//     through a cache per immutable index segment, so a broad term costs
//     little more than reading its postings. A prefix alone (pre*, the
//     probe's costliest text mode at 1 M) is no bleve searcher: its
//     matches are the union of its words' document bitmaps, read segment
//     by segment (eachPrefixMatch).
//  4. The where tree is evaluated per candidate: the documents of the
//     smallest fts conjunct, the k nearest, or every document.
//  5. The matches are counted (Total), the page is selected with a bounded
//     heap over the sort keys (Query.EffectiveSort: ties by id ascending,
//     missing values last in both directions, _score ignored when nothing
//     ranks) and the hits are built from the table. When one fts clause is
//     the whole search, its matches go straight to that heap
//     (topCollector): no score array, no match list, and nothing
//     allocated per match (a prefix at 1 M offers tens of thousands).
//
// Scores: BM25 in fts modes (also with a vector clause: the vector only
// selects), 1/(1+d²) with a vector clause and no fts clause, nil otherwise.
//
// Filters follow the dsl semantics: eq/ne exact and case-sensitive, ne and
// nin (and not) also match documents lacking the field, ranges compare
// strings byte-wise (UTF-8 order), contains/startswith compare the
// strings.ToLower forms, dates compare instants (a bare date in eq/ne/in/
// nin is its whole UTC day), filesbelongto matches when any folder matches.
//
// Highlights (when the query wants them and has an fts clause): the stored
// content of each hit is analysed again and the positive terms of the fts
// clauses (not excluded, not under not) are located exactly as they match,
// then package highlight builds the snippets. A hit without a located
// match gets an empty, non-nil list.
//
// Deadlines: Search checks its context while it scans and returns an error
// wrapping context.DeadlineExceeded (or context.Canceled).
package bleveengine
