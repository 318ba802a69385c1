// Package searchsvc is the search service: SearchService.Search (spec
// §4.8) over a search engine, and in embedded mode the indexing pipeline
// too.
//
// A request is converted to the DSL (pkg/search/dsl), parsed and planned;
// every DSL error is a 400 with its detail (unknown fields in the spec §7
// wording). The vector clause's text is embedded with the same embedder the
// indexer uses. The caller's groups are the visibility pre-filter of every
// mode and of total; callers holding the internal scope see everything.
// The search, embedding included, runs under DOCREPO_SEARCH_TIMEOUT
// (default 10s); past it the answer is 504 "Gateway Timeout".
//
// Results: id always, _score (a number, or null when nothing ranks),
// _highlights when include_highlights is set or _highlights is selected,
// and every selected metadata field: dates as RFC 3339 strings in UTC,
// filesbelongto as an array of numbers (empty without folders), other absent values null. An empty
// select array cannot be told from an absent one in the protobuf request,
// so it returns the default fields.
//
// Engines: with OPENSEARCH_URL set, OpenSearch (written by the separate
// indexer process). Otherwise the embedded engine (bleve plus an exact
// vector scan) in DOCREPO_INDEX_DIR, and, because that index has a single
// writer, this process runs the indexing pipeline itself (pkg/indexing): it
// consumes document events from NATS JetStream and serves
// IndexerService.Reindex on its own gRPC port.
//
// Metrics: docrepo_search_duration_seconds{mode,outcome}, plus the
// indexer's metrics in embedded mode. /readyz is ready when the engine
// answers.
package searchsvc
