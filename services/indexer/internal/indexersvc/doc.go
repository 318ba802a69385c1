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
// Configuration (flags or environment): the common service settings, the
// pipeline settings of indexing.Settings (DOCREPO_DOCUMENT_ADDR,
// DOCREPO_SERVICE_TOKEN, DOCREPO_EMBEDDER*, DOCREPO_EMBED_*, DOCREPO_INDEX_*,
// DOCREPO_EXTRACT_TIMEOUT, the OCR settings DOCREPO_OCR* of pkg/ocr and the
// README's OCR section) and OPENSEARCH_URL, OPENSEARCH_USERNAME,
// OPENSEARCH_PASSWORD, OPENSEARCH_INDEX. /readyz is ready when OpenSearch
// answers.
package indexersvc
