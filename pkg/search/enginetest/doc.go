// Package enginetest is the behaviour suite every search engine
// (pkg/search/engine.Engine) must pass, so that the embedded engine and
// OpenSearch answer the same requests the same way (docs/design.md §6).
//
// Run it from the engine's tests:
//
//	func TestConformance(t *testing.T) {
//		enginetest.Run(t, func(t *testing.T) engine.Engine {
//			e := newEmptyEngine(t) // register its cleanup with t.Cleanup
//			return e
//		})
//	}
//
// newEngine must return a new, empty engine each time it is called. The
// suite expects read-your-writes: a document is searchable as soon as the
// Upsert that wrote it returns (an OpenSearch engine refreshes, e.g. with
// refresh=wait_for).
//
// The suite covers, with small hand-made documents whose answers are known:
//
//   - FTS: bare words (stemmed, case-insensitive), phrases (exact tokens, in
//     order), prefixes (exact, lowercased), NEAR (*N, *N<n>, *NP) at exactly
//     n and n+1 tokens apart and in both orders, exclusion, OR and its
//     precedence over the implicit AND, stop words (left out of a
//     conjunction; a query of stop words only matches them exactly), words
//     the analyzer splits (e-mail, COVID-19: a phrase of their tokens), and
//     fts clauses mixed with metadata clauses under and/or/not.
//   - Filters: every operator on every field type (string, id, the
//     multi-valued filesbelongto, booleans, dates with whole-day and instant
//     values), ne/nin/not matching documents lacking the field,
//     case-insensitive contains/startswith with wildcard characters in the
//     value.
//   - Modes and scores: _score null without ranking, BM25 in fts modes (also
//     with a vector clause), 1/(1+d²) for vector-only; vector_k nearest
//     among the pre-filtered documents; documents without a vector are never
//     neighbours; vector-only total = min(k, eligible).
//   - Passages: a document's content vectors are passages and its
//     distance is its nearest passage's (a long document found by a
//     passage deep inside it, once); vector_k counts documents, not
//     passages; a new revision replaces the passages; passages of
//     different lengths are refused. The recorded embedder identity
//     round-trips. For engines implementing engine.VectorStage: a
//     document written with its vectors pending is found by full text at
//     once, by vector once it has them, and only at its revision.
//   - Visibility: invisible documents never appear nor count in total, in
//     every mode.
//   - Sort, paging and total: every sortable type in both directions,
//     missing values last, ties by id ascending, exact pages.
//   - Highlights: only when asked and with an fts clause, <b> tags, HTML
//     escaping of content, the visible-length limit, at most 3 snippets.
//   - Writes: the revision guard, tombstones, Revision, Count, Reset. A
//     Delete (also of an absent document) leaves a tombstone at its
//     revision that turns away older Upserts for as long as the engine
//     lives, not for a grace period (OpenSearch forgets versioned deletes
//     after index.gc_deletes, 60 s by default); only Reset clears them.
//     Within one Upsert call the newest revision of an id wins; whether a
//     superseded one counts as written or stale is left to the engine.
//   - Deadlines (errors wrapping context.DeadlineExceeded) and ErrClosed.
//   - DocFreqs, for engines implementing engine.DocFreqs: stemmed bare
//     words counted among the caller's documents, stop words 0, and the
//     caller's documents with content (not those without).
package enginetest
