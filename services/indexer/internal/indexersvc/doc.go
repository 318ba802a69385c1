// Package indexersvc is the indexer process: it runs the indexing pipeline
// (pkg/indexing) against OpenSearch, consuming document events from NATS
// JetStream with a durable pull consumer and serving IndexerService.Reindex
// (scope admin) for `docrepoctl reindex`.
//
// It exists for the OpenSearch deployment only. With the embedded engine the
// index has a single writer, the search process, which runs the same
// pipeline in-process; so without OPENSEARCH_URL the indexer refuses to
// start and says so. Several indexer processes may run side by side: they
// share the durable consumer (DOCREPO_INDEX_CONSUMER) and so the work, and
// OpenSearch's external versioning keeps only the newest revision of each
// document whatever the order of their writes.
//
// Configuration: the common service settings, the pipeline's
// indexing.Settings (embedder, batching, timeouts, OCR) and the OpenSearch
// connection, all in docs/configuration.md. /readyz is ready when
// OpenSearch answers.
//
// Rebuilding: `docrepoctl reindex -recreate` runs indexing.Indexer.Rebuild
// with an opensearchengine.Generation as its target: every document is
// written into a new versioned index (<OPENSEARCH_INDEX>-v<N+1>) while
// searches and the consumer's writes go through the alias to the current
// one, the new index is caught up with the changes made meanwhile, and the
// alias is moved in one POST /_aliases; the old index is then deleted. The
// search service reads through the alias and follows without a restart.
// Consumers in other indexer replicas keep writing through the alias; what
// they write during the rebuild reaches the new index by the catch-up and
// by the anti-entropy pass after the switch. Run one rebuild at a time.
// With a concrete index from before versioned indexes, the first rebuild
// moves it behind the alias. `docrepoctl reindex` without -recreate writes
// through the alias into the index in use.
package indexersvc
