// Package opensearchengine implements engine.Engine on OpenSearch
// (opensearch-go/v4): BM25 full text and k-NN vectors (HNSW on the lucene
// engine, space_type l2), for deployments; the embedded engine
// (bleveengine) is the default. Both execute the parsed query of
// pkg/search/dsl with the semantics of docs/design.md §6, and the shared behaviour
// suite (enginetest) holds both to them.
//
// # Configuration
//
// New(ctx, Config) connects, checks the server and creates the index when
// it is missing (see Index versions). ConfigFromEnv reads the connection
// from the environment:
//
//	OPENSEARCH_URL       node URLs, comma-separated (required)
//	OPENSEARCH_USERNAME  HTTP basic auth user
//	OPENSEARCH_PASSWORD  HTTP basic auth password
//	OPENSEARCH_INDEX     alias name (default docrepo-documents)
//	OPENSEARCH_INSECURE  true: skip TLS certificate verification
//
// The caller sets Dimensions (and MetadataDimensions when the metadata
// embedder differs) from its embedder; Refresh (false, wait_for, true; tests
// use wait_for), SearchTimeout, MaxRetries/RetryBackoff, Shards, Replicas
// and GCDeletes have defaults. OpenSearch 3.1 or later with the k-NN plugin
// is required (MinVersion): 3.1 added matched_fields to the unified
// highlighter, which the snippets need; New refuses older servers. When the
// index exists, New checks that its vector dimensions match.
//
// # Index versions
//
// Config.Index (OPENSEARCH_INDEX) is an alias; the documents live in the
// concrete index <alias>-v<N> it points at, and every read and write goes
// through the alias, so whoever holds an Engine follows a switch without
// being told. New on a cluster without either creates <alias>-v1 with the
// mapping and the alias in one create-index request.
//
// A full rebuild (docrepoctl reindex -recreate: indexing.Indexer.Rebuild
// with a Generation as its Target, wired in services/indexer) runs
// without downtime:
//
//  1. NewGeneration deletes every <alias>-v<M> the alias does not point at
//     (left by a rebuild that never finished) and creates <alias>-v<N+1>,
//     empty, with the mapping.
//  2. The rebuild writes every document into it through Generation.Engine,
//     while searches and the consumer's writes go on through the alias to
//     the current index; then it catches the new index up with the
//     documents changed meanwhile (the anti-entropy pass, run into it).
//  3. Commit refreshes the new index, checks that it is still the one
//     created (a write re-creates a deleted index with dynamic mappings),
//     and moves the alias in one POST /_aliases: remove (must_exist, so the
//     call fails as a whole if the alias moved meanwhile) and add. Then it
//     deletes the old index. A lost answer is settled by reading the alias.
//  4. The anti-entropy pass on the alias brings over the writes made
//     during the catch-up.
//
// Until the switch the alias stays on the old, complete index: a rebuild
// that fails, is cancelled or crashes changes nothing searches see, and
// its index is deleted by Abandon or by the next rebuild. Two rebuilds must
// not run at once (the second deletes the first one's index, and the first
// then fails at Commit).
//
// Indexes made before versioned indexes: when Config.Index names a
// concrete index, New keeps using it as it is. The first rebuild creates
// <alias>-v1 and switches with remove_index + add in one POST /_aliases,
// which deletes the old index and puts the alias in its place atomically.
// Until then nothing changes for such a deployment.
//
// Reset (engine.Engine) is a rebuild with nothing written: the alias moves
// to a new, empty index, so it never lacks an index (the old delete and
// re-create left a moment in which a write auto-created an index with
// dynamic mappings).
//
// The OpenSearch user therefore needs, besides reading and writing
// documents, to create and delete <alias>-v* and to change and read
// aliases (indices:admin/create, indices:admin/delete, indices:admin/aliases,
// indices:admin/aliases/get, indices:admin/mappings/get, indices:admin/refresh).
//
// # Mapping (IndexBody, golden-tested)
//
//   - content: text, built-in english analyzer (standard tokenizer,
//     possessive removal, lowercase, English stop words, Porter stemmer),
//     BM25; bare words match it. content.exact: standard tokenizer +
//     lowercase (no stop words, dense positions); phrases, prefixes and NEAR
//     match it. Both index offsets (highlighting without re-analysis).
//   - string metadata: keyword (exact, case-sensitive; ranges and sort by
//     code point), with a .lower sub-field (lowercase normalizer) for
//     contains/startswith; ignore_above 8191 characters.
//   - id, filesbelongto (multi-valued), groups (visibility): long. date,
//     entry_date: date (stored at millisecond resolution; the _source keeps
//     the nanoseconds). privileged, islocked: boolean.
//   - content_passages: nested, one object per passage of the content
//     (engine.Document.ContentVectors), each with a knn_vector "vector";
//     metadata_vector: knn_vector. Both method hnsw, engine lucene,
//     space_type l2, m 16, ef_construction 100. (An index created before
//     passages, with a single content_vector, is refused by New: create
//     a new index and reindex into it.)
//   - _meta.docrepo_embedder: the identity of the embedder whose vectors
//     the index holds (Config.Embedder when New creates the index;
//     SetEmbedder updates it with the put-mapping API; Embedder reads it,
//     at most every 5 s).
//   - index.knn true; one shard by default; dynamic: strict.
//
// # Translation (pure functions, golden-tested per construct and mode)
//
// No user text reaches a query parser: it only appears as terms, range
// bounds, escaped wildcard patterns and the text of match/match_phrase
// queries. Full text (ftsQuery):
//
//	word            match on content (stemmed); a word the tokenizer
//	                splits ("e-mail") is match_phrase on content
//	"phrase"        match_phrase on content.exact
//	pre*            prefix on content.exact, lowercased, rewrite
//	                constant_score (never expands into a boolean query, so
//	                no too_many_clauses; a prefix scores a constant)
//	*N<n>"a b"      span_near{span_term a, span_term b; slop n,
//	*NP<n>"p" "q"   in_order false}, each phrase clause a span_near with
//	                slop 0 and in_order true
//	a OR b          bool should, minimum_should_match 1
//	a b, -c         bool must / must_not
//
// NEAR: Lucene's unordered span_near matches when (last end − first start)
// − (sum of the clauses' lengths) ≤ slop, i.e. exactly when at most n other
// tokens lie between the first and the last clause, in any order (docs/design.md
// §6). span_term is not analysed, so the client tokenizes the clause words
// like content.exact (UAX #29 word segmentation, lowercased).
//
// Stop words, as in the embedded engine: a term that analyses to nothing
// (a stop word, punctuation) is dropped from its conjunction or
// disjunction ("the report" = report); a query left with no term is
// translated again with bare words matched exactly on content.exact ("the"
// finds documents containing "the"); a query of punctuation only matches
// nothing.
//
// Metadata (filter context, never scoring): eq → term (a bare date: range
// [midnight, next midnight)), gt/gte/lt/lte → range, in → terms (dates: a
// disjunction of eq), contains → wildcard *v* on the .lower field with v
// lowercased and *, ? and \ escaped, startswith → prefix on .lower; ne, nin
// and not → bool must_not, so documents lacking the field match. A metadata
// clause inside a full-text or (or[fts, eq]) is wrapped in a filter-only
// bool so that it scores 0. Dates are sent with nine fraction digits in
// UTC; OpenSearch truncates them to milliseconds.
//
// Visibility: a terms filter on groups (match_none for a caller without
// groups, nothing for an unrestricted one) is the first filter of every
// mode, including the knn query's filter.
//
// # Modes
//
//   - no where / metadata only: constant_score over the filters; the sort
//     decides (its _score keys are dropped: nothing ranks), _score null.
//   - fts (+ metadata): bool{filter: visibility, filters; must: full text},
//     BM25, track_scores.
//   - vector (+ metadata): one knn query, k = vector_k, with visibility and
//     the metadata filters as its efficient filter (lucene filters inside
//     the HNSW search: the k nearest eligible documents, not the eligible
//     among the k nearest), size k. For the content target it is a nested
//     knn query on content_passages.vector with score_mode max: a
//     document scores as its nearest passage and appears once, and k
//     counts documents (the k-NN plugin's nested field search; the
//     filter names the documents' own fields, which a nested knn filter
//     may). The coordinator keeps the k best of the
//     shards' top k, so the hits are the k nearest for any shard count, and
//     total = their number = min(k, eligible). The engine sorts them by the
//     request's sort (missing values last, ties by id) and pages them;
//     _score is OpenSearch's l2 score, 1/(1+d²) with d² the squared
//     Euclidean distance (k-NN "Spaces" documentation; Lucene's EUCLIDEAN
//     similarity), so no conversion is needed.
//   - fts + vector (+ metadata): two steps. (1) the knn query above with
//     _source off: the ids of the k nearest eligible documents. (2) the fts
//     search with terms{id: those ids} added to its filters: BM25 over the
//     full-text matches among the k nearest, with exact total, sort,
//     from/size and highlights done by OpenSearch. (A knn clause inside the
//     scoring bool would add its similarity to BM25.)
//
// Every search has track_total_hits true (exact totals), sort keys with
// missing: _last and a final id ascending, from/size (offset+limit ≤
// 10000 = index.max_result_window) and _source includes of the selected
// fields. Highlights (when asked and there is a full-text clause): unified
// highlighter on content with matched_fields [content, content.exact] (so
// stemmed and exact matches mark the same snippets), pre/post tags <b>
// </b>, encoder html (all other text escaped), 3 fragments, fragment_size
// = highlight_length. Each fragment is then rewritten the way the shared
// snippets are (the text unescaped and escaped again, since OpenSearch also
// escapes '/' and writes &#x27; for "'"; control characters as spaces;
// adjacent marks merged) and clipped to highlight_length visible characters
// (highlight.Clip).
//
// Time limits: the request's timeout is what is left of ctx's deadline,
// less a margin for the answer (a tenth, at most 100ms), or
// Config.SearchTimeout if sooner; a timed_out answer, like ctx ending,
// gives an error wrapping context.DeadlineExceeded. Shard failures are
// errors, never partial results.
//
// # Word statistics (DocFreqs, golden-tested)
//
// The use embedder weights a query vector's words by their IDF among the
// documents the caller can see (engine.DocFreqs). DocFreqs asks one
// search: size 0, track_total_hits, the caller's visibility filter and
// exists on content as the query (its total is N, the caller's documents
// with content: empty content is not written, so it does not exist), and
// a filters aggregation of one match on content per word (its buckets are
// n). Each word is reduced on the client to its first content.exact token
// that is not a stop word, as the embedded engine counts the first token
// of its analysis; the match then lets the content field's english
// analyzer stem it, so n is the document frequency of exactly the term a
// bare-word search scores, counted among the caller's live documents (as
// the embedded engine's BM25 counts, not OpenSearch's own per-shard
// statistics over every group and the deleted documents not yet merged
// away). One search rather than an _msearch of one count per word: one
// round trip, the visibility filter evaluated once per shard, all counts
// from the same reader (no refresh between two of them) and an answer the
// shard request cache keeps until the next refresh.
//
// What can differ from the embedded engine: bleve stems with its Go port
// of Porter's reference stemmer and OpenSearch with Lucene's Java one
// (the shared suite and TestIntegrationDocFreqsCountLikeBM25 check a few
// stems: report, approv, quarterli, secretari, budget; a word on which
// the two ports disagree would count differently, as it already
// matches differently in full-text search); OpenSearch's standard tokenizer splits tokens longer than 255
// characters; content of punctuation or spaces only exists here (N counts
// it) but has no token there; and documents written with empty content
// before DocFreqs count in N until rewritten or reindexed.
//
// # Query shift and second stage (golden-tested)
//
// The query side is shared with the embedded engine (engine.PrepareVector
// builds the query vector and the second stage once, for either engine),
// so a use query is shifted and re-scored alike here. MeanContentVector
// (engine.VectorMean, mean.go) takes the mean of the caller's passage
// vectors with one size-0 search: the visibility filter and documents
// with passages as the query in a fixed-seed random_score order, a
// sampler of at most meanSample documents per shard, a nested
// aggregation over the passages and a scripted_metric summing their
// knn_vector doc values; the mean is kept per recorded embedder and
// visibility and taken again once the documents with passages change by
// an eighth (a size-0 count, at most every meanRecount, checks that). A
// vector-only search with engine.Rerank (rerank.go) fetches the content of the first Depth of
// its k hits (a terms search on id, content from _source) and re-scores
// the hits with Rerank.Distance before sorting and paging them: the
// second stage is Go code (a GloVe word alignment) that no rescore
// script could run. See docs/design.md §6, "Query-side parity".
//
// # Writes and versioning
//
// Upsert sends bulk index actions with version = Rev and version_type
// external: OpenSearch stores a document only when Rev is greater than
// the stored version and otherwise answers 409, which counts as Stale
// (within one call the newest revision per id is sent, the others are
// Stale). Items rejected with 429 or 503 are resent with backoff; other
// item errors are reported after the batch. Delete uses version_type
// external_gte (deletes unless a newer revision is stored; 404 and 409 are
// not errors) and leaves a version tombstone, so an older Upsert arriving
// within index.gc_deletes (60s by default, Config.GCDeletes) is Stale.
// Revision is a realtime GET with _source=false reading _version. Count
// counts refreshed documents. Reset switches the alias to a new, empty
// index and deletes the old one (also dropping the tombstones). Requests
// failing with 429, 502, 503, 504 or a connection error are retried by the
// transport with exponential backoff; every write is idempotent.
//
// # Tests and limits
//
// No OpenSearch runs where this package is developed, so the evidence is
// layered, and only the last layer is OpenSearch itself:
//
//   - golden files (testdata/golden; go test -run Golden -update rewrites
//     them) pin the index body, the bulk body and every search body, for
//     every construct and mode: they show what is sent, for review.
//   - wire tests (wire_test.go) run the engine against a fake server
//     (httptest) to check paths, parameters, NDJSON, version conflicts,
//     retries of 429/503, error surfacing and timeouts. They say nothing
//     about query semantics. alias_test.go runs the index versions (first
//     start, rebuild and switch, interrupted rebuilds, the index from
//     before, Reset) against the emulator below, which keeps indexes and
//     aliases as the documentation describes them.
//   - TestEmulatedOpenSearchPassesTheEngineSuite runs the shared behaviour suite (enginetest)
//     against an in-process emulator that evaluates the bodies the way the
//     OpenSearch documentation describes, with bleve's equivalents of the
//     analyzers. It checks the translation's logic against the suite's
//     answers; where the emulator misreads OpenSearch, both can be wrong
//     together.
//   - TestRealOpenSearchPassesTheEngineSuite and TestIntegrationSearchMatchesHandCheckedAnswers run the suite and
//     hand-checked expectations (NEAR boundaries, exact l2 scores,
//     efficient filtering, highlights combining stemmed and exact matches),
//     and TestIntegrationRebuildSwitchesTheAliasAndCleansUp the index versions, against a real
//     OpenSearch when OPENSEARCH_URL is set, each test under its own
//     docrepo-test-… alias, and skip otherwise. Nothing else replaces
//     them.
//
// Known differences from the embedded engine: HNSW search is approximate
// (the embedded engine scans exactly), so on large corpora the k nearest
// may differ slightly; BM25 statistics are per shard and scores differ in
// detail (bleve's BM25 is not Lucene's); dates filter and sort at
// millisecond resolution; a multi-token prefix ("e-ma*") expands into at
// most indices.query.bool.max_clause_count terms; a deleted document's
// version is forgotten after index.gc_deletes.
package opensearchengine
