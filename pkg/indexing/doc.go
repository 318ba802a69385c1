// Package indexing is docrepo's indexer pipeline as a library: it keeps a
// search engine (pkg/search/engine) in step with the documents of record.
//
// It is a library, not only the indexer process, because in embedded mode
// the search process must run it itself: the embedded bleve index has a
// single writer. With OpenSearch the indexer process (services/indexer) runs
// it instead.
//
// # The per-document path
//
// Every document goes through the same steps, whether an event or a reindex
// asked for it (Indexer.Index):
//
//  1. When the caller knows a revision (an event's rev) and the engine
//     already holds that revision or a newer one, nothing is done.
//  2. DocumentService.GetIndexDocuments (as the service identity, scope
//     internal) loads the current state of the batch's documents in one
//     call: metadata, rev, groups, folders and the current file, with the
//     bytes of files up to InlineMaxBytes inline. deleted=true removes the
//     document from the engine. If the engine holds the loaded rev or a
//     newer one, nothing more is done. A batch call refused for another
//     reason than an unreachable service is followed by GetIndexDocument
//     per document, so a refusal stays its document's; a document service
//     without the batch calls gets GetIndexDocument per document.
//  3. A file that did not come inline is streamed through
//     DocumentService.DownloadFile into a temporary file (never into
//     memory); its text is extracted
//     (pkg/extract) under a timeout and its work budgets (operators, forms,
//     markup tokens). Files over Options.MaxFileBytes are
//     indexed without content. A file that cannot be extracted (malformed,
//     hostile, too slow) is a poison input: the document is indexed with
//     its metadata and no content, and the failure is logged and counted,
//     so it never blocks the stream. With an OCR engine (Options.OCR,
//     pkg/ocr), pages without a text layer and images are read by OCR
//     (from the cache, by the OCR stage, or at once when the item does
//     not defer OCR: reindex and verify); an OCR failure keeps the text
//     that could be read and counts in docrepo_indexer_ocr_failed_total. Where the text came from (text,
//     ocr, none) is reported to the document service
//     (DocumentService.SetContentSources, one call per batch, for GET's
//     content_source) before the engine write, so a failed report is
//     retried with the event.
//  4. The content is embedded as overlapping passages (pkg/embed:
//     embed.Passages, at most Options.MaxPassages; an embedder without
//     windows gets the first Options.MaxEmbedBytes as one passage) and
//     the canonical metadata text (engine.MetadataText) as one vector,
//     batched over all documents of the batch, provided the engine
//     records this embedder (or none yet: then it is recorded first);
//     into an index of another embedder documents go without vectors
//     (see embedder.go). With Options.DeferVectors the content is not
//     embedded here: the document is marked VectorsPending and the
//     vector stage (vectorstage.go) embeds it after the write.
//  5. engine.Upsert writes the batch; the engine keeps only newer revisions,
//     so replays and reordering are harmless.
//
// # The event consumer
//
// Consume runs a durable JetStream pull consumer on the DOCREPO stream,
// filtered to docrepo.document.* (folder events do not change what is
// indexed: filesbelongto holds folder ids, and a folder deletion reaches
// the index as folders_changed events of its documents, which the document
// service emits when it removes their assignments). It
// takes up to BatchSize messages at a time, collapses several events of one
// document into one load, indexes them, and acknowledges each message only
// after the engine write that covers it. After a transient failure the
// consumer probes the document service (with its database) and the engine;
// when they do not answer it is an outage: the batch's events are held in
// progress and tried again the moment the probe answers (no growing
// delay, no deliveries counted towards the dead-letter stream). Otherwise
// the failure is the document's own, and its events are negatively
// acknowledged with an exponential backoff and retried; a file that still
// cannot be downloaded after ContentAttempts deliveries is indexed without
// content, and its file is left recorded as not read, so the anti-entropy
// pass (verify.go) reads it again later.
//
// The ack wait is short (10 s): a message delivered to a consumer that then
// died comes back within seconds, while work in progress keeps its messages
// with heartbeats. Every outbound call has a deadline (CallTimeout,
// EngineTimeout, DownloadIdle), so a hung document service, engine or blob
// store fails the item instead of stalling the stream. Events delivered
// IsolateAfter times are handled one by one, so one that makes the process
// fail fails alone. An event that is not a document event, that the
// document service refuses, or that was delivered MaxDeliver times without
// being handled is parked in the dead-letter stream (DOCREPO_DEADLETTER)
// with its reason, counted in docrepo_indexer_deadlettered_total, and
// listed and retried with docrepoctl deadletter.
//
// OCR never holds an event: when a document needs OCR and its file's OCR
// text is not cached (pkg/ocrjobs, by the file's SHA-256 and the OCR
// settings), the consumer writes the document with its text layer,
// enqueues an OCR job in the same step (Item.DeferOCR) and acknowledges
// the event. The job queue is durable (Postgres, the schema of the
// process that writes the engine), holds at most one job per document
// (the newest revision wins) and hands jobs out fairly between users;
// the OCR stage (ocrstage.go, RunOCRStage) reads the documents again
// with OCR, a few at a time, and writes them with their OCR text. A scan
// therefore delays nothing but its own OCR text, and a flood of scans
// never fills the consumer's MaxAckPending.
//
// The consumer creates what it needs that is missing — the DOCREPO stream
// (configured as the publishing services configure it), its durable
// consumer and the dead-letter stream — and checks every two seconds that
// the server still has them: a pull consumer whose stream vanished (a NATS
// server restarted with an empty store) does not fail, it only stops
// delivering. When they are gone it creates them again and runs the
// anti-entropy pass, which indexes what the events lost with the store
// would have (docrepo_indexer_consumer_recreated_total).
//
// Since acknowledgements follow engine writes and writes are idempotent by
// revision, a consumer killed at any point and restarted loses nothing and
// duplicates nothing: unacknowledged messages are redelivered and either
// written or found current.
//
// # Reindex
//
// Reindex pages through DocumentService.ListDocumentIds and sends every id
// through the same path, reporting progress. Server wraps it as the
// IndexerService gRPC API (scope admin). With recreate, a Server given
// RebuildInto runs Rebuild instead: every document into a new index (a
// Target), which the indexer's own writes reach too while it is built
// (uploads, updates and deletions made meanwhile; the switch waits until
// their vectors are in it), caught up with the documents of record, then
// switched to atomically, so searches never see a partial or empty
// index; both engines provide one (rebuild.go). Without RebuildInto, recreate empties
// the engine first (engine.Reset).
//
// # The embedder of the index
//
// CheckEmbedder (embedder.go) runs at start-up in every process that
// embeds: an index holding vectors of another embedder is refused
// (DOCREPO_EMBEDDER_CHANGE=refuse, the default), or re-embedded online
// (rebuild: Server.Reembed), never mixed.
//
// # Metrics
//
// docrepo_indexer_lag_seconds (event occurred_at → indexed),
// docrepo_indexer_pending (messages the consumer has not yet processed),
// docrepo_indexer_indexed_total{result} and docrepo_indexer_failed_total{reason};
// docrepo_indexer_vector_backlog (documents waiting for their vectors),
// docrepo_indexer_ocr_jobs{state} and docrepo_indexer_ocr_jobs_total{event}
// (the OCR queue), docrepo_indexer_ocr_cache_total{result},
// docrepo_indexer_vectors_withheld_total (batches written without vectors
// into an index of another embedder), docrepo_indexer_reembed_running,
// _done and _total (an online re-embedding).
package indexing
