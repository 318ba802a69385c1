// Package documentsvc is the document service: documents, their files and
// versions, locks, doc numbers, folder assignments and custom-field values
// (docs/api.md §2.1–2.6, §4.1–4.4; docs/design.md §4–§5). It owns the tables of
// schema document (migrations/); folders and doc types/templates are read
// only through the folder and schema services, called with the caller's own
// token, and deleted folders are learnt from the folder.deleted event
// (folders.go; docs/architecture.md).
//
// # Uploads
//
// The gateway turns the multipart body into a client stream as it reads it:
// metadata messages (in any order around the file), a file header, chunks
// of just under 1 MiB. The service streams the chunks into the blob store under a fresh
// key, hashing (SHA-256) and counting on the way; no more than one chunk is
// held in memory at either end, whatever the file's size (see Benchmarks).
//
//   - Metadata that arrives before the file is validated when the file
//     header arrives, before any byte is stored: field limits, the date,
//     the doc_number_prefix, the folder (FolderService.GetFolders as the
//     caller: unknown or invisible → 404 "Folder not found") and the doc
//     type (SchemaService.GetDocType: unknown → 422 "Unknown doc_type: <x>";
//     a type the schema service confirmed is trusted for a minute, as doc
//     types are never renamed or deleted, so repeated uploads of one type
//     cost no round trip; unknown types are asked every time).
//     Everything is validated again when the stream ends (only values not
//     yet confirmed are sent to the other services again); a failure then,
//     or in the database transaction, deletes the stored object. Required
//     fields are reported in the spec's order: file, then folder_id.
//   - Limits (docs/api.md §8) count characters, not bytes; exactly the maximum is
//     accepted, one more is 400 "Invalid value for <field>: longer than <n>
//     characters". The business date must fall in years 1 to 9999 once
//     converted to UTC (9999-12-31T23:00:00-05:00 is a 400). Empty optional fields (as HTML forms send them) mean "no
//     value"; an empty description means "use the default", which is the
//     uploaded filename (cut to 400 characters; "Untitled" without one).
//   - folder_id 0 is the root: the document gets no folder assignment. It
//     is assigned to every group of the uploader; an uploader without any
//     group is refused (403), since nobody could ever see the document.
//   - The original filename is data only: only its last path segment is
//     kept (browsers may send C:\fakepath\x.pdf), at most 255 characters.
//     Storage names are generated: image_name is a UUID plus the original
//     extension when that is 1 to 10 lower-case letters or digits; the blob
//     key is files/<first two hex digits>/<image_name>.
//   - Size: DOCREPO_MAX_UPLOAD_BYTES (docs/configuration.md; also read by
//     the gateway, which refuses larger Content-Lengths outright); the service
//     counts the streamed bytes, so chunked bodies are limited too → 413
//     "File too large". Empty files are accepted.
//   - MIME type: the part's Content-Type unless it is empty, unparsable or
//     application/octet-stream; then http.DetectContentType on the first
//     512 bytes, refined by a built-in extension table where sniffing only
//     sees a container (zip → docx/xlsx/pptx/odt...; OLE2 → doc/xls/ppt) or
//     plain text (csv, md, json...). The extension never overrides a
//     specific sniffed type (a PNG named .docx stays image/png).
//   - page_count: for PDFs (by type or %PDF- signature), extract.PageCount
//     over the stored object through a block cache (64 KiB blocks, at most
//     4 MiB), so S3 serves few ranged GETs. PDFs over
//     DOCREPO_PAGECOUNT_MAX_BYTES (the parser holds a PDF's streams in
//     memory) and damaged PDFs get page_count null; the upload
//     never fails for its page count.
//   - doc_number: "<prefix>-<5-digit sequence>" (more digits past 99999)
//     from doc_number_sequences, incremented by INSERT ... ON CONFLICT DO
//     UPDATE ... RETURNING in the transaction that inserts the document, so
//     concurrent uploads serialise on the prefix's row and numbers are
//     distinct and gap-free. Prefixes are 1 to 30 of A-Z a-z 0-9 _ . / -,
//     starting with a letter or digit (case-sensitive: "inv" and "INV" are
//     separate sequences). Since the sequence part is all digits, two
//     prefixes can never produce the same number.
//
// # Reading
//
//   - Visibility: a document is visible iff it shares a group with the
//     caller (document_groups); internal-scope callers see all. Invisible
//     and missing documents get the same 404 "Document not found" on every
//     route (docs/api.md §7 allows 403 for "no permission"; docs/design.md §3 says 404,
//     and a 403 would confirm the document exists).
//   - A doc id that is not a positive integer is 400 on every route (docs/api.md
//     §4.4 "400 invalid docID").
//   - include is a comma-separated list of versions, folders, customfields
//     (case-insensitive, blanks ignored); anything else is 400.
//     linked_files holds the current file (newest first; new versions move
//     the old file to the archive, so there is one). The reads of one
//     request share a repeatable-read snapshot.
//   - include=folders lists the assignments the caller can see, resolved
//     through FolderService.GetFolders, sorted by full_path; a folder of the
//     document in a group the caller lacks is left out.
//   - locked_by is the username holding the lock, null when unlocked or
//     when the lock is past DOCREPO_LOCK_TTL (islocked false too, as the
//     writes see it, before the sweeper releases it; locks.go lockHeldSQL).
//   - content_source (an extension) tells where the searchable text of the
//     current file came from, as the indexer reports it through
//     SetContentSource (scope internal): "text", "ocr" or "none"; "none"
//     for a document without a file; null until the indexer has read the
//     current file (a new version starts null again). It is stored per file
//     (linked_files.content_source) and recording it is no write search
//     must see: no rev bump, no event.
//
// # Writes
//
//   - PATCH changes only the supplied fields; the response is exactly the
//     §4.3 fields. No field → 400 "No fields to update". description must
//     not be empty or blank (400); other empty strings clear the field. The
//     limits of upload apply; doc_type must exist (422, as on upload).
//   - Locks (docs/design.md §4): lock records the holder; locking again by the
//     holder is a no-op 200; lock or unlock by another user → 423
//     "Document is locked by another user"; unlock of an unlocked document
//     is a no-op 200. While locked, PATCH, new versions and custom fields
//     are refused with 423 "Document is locked", whoever holds the lock,
//     the holder included (docs/api.md §3: a locked document cannot be modified).
//     Reads and downloads are unaffected.
//   - New version: visibility and the lock are checked before any byte is
//     stored and again under the row lock. The current file moves to
//     file_archive (type "replaced via api", its hash, size and blob kept,
//     description "Replaced by <new name> (uploaded by <user>)"), the new
//     file becomes current. Archived bytes are never deleted.
//   - Every write bumps documents.rev and inserts its outbox row (created,
//     updated, file_replaced, locked, unlocked, customfields_changed) in
//     the same transaction; no-op lock/unlock calls write nothing. Removing
//     a folder assignment (when the folder.deleted event arrives) bumps rev
//     and emits folders_changed through the trigger of
//     migrations/0001_document.sql. With NATS_URL set, the service runs its
//     outbox relay; without it, rows are stored and published later.
//
// # Downloads
//
//   - By default the current file. linked_file_id names a file version by
//     its ownid, and keeps working after that file was replaced (archived
//     rows remember former_ownid); archive_id names a history entry by its
//     own_id. A file of another document is 404 "File not found".
//   - Content-Disposition: attachment; the filename is the description
//     with the file's original extension appended unless already there,
//     path separators and control characters replaced ("download" when
//     nothing is left). ETag is the SHA-256 (strong); If-None-Match → 304;
//     single byte ranges → 206 (several ranges or a malformed header: the
//     whole file, as RFC 9110 allows; unsatisfiable → 416); If-Range with
//     a stale validator sends the whole file.
//   - Internal callers (the indexer) may download any document.
//
// # Custom fields and values
//
//   - PUT .../customfields/{template_id} replaces the document's rows of
//     that template (at most 1000). Columns come from
//     SchemaService.GetTemplate (unknown → 404 "Custom field template not
//     found"); unknown column names are 400 naming the column. Types: text
//     a string (≤ 4000 characters), number a JSON number, date YYYY-MM-DD
//     (kept) or an RFC 3339 date-time (stored in UTC; years 1 to 9999 in
//     UTC, like the business date), boolean a JSON
//     boolean, select exactly one of the options; GridLink columns take the
//     type and options of the Grid column they link to. null leaves a
//     column without value. Rows are stored keyed by column id, returned
//     keyed by column name.
//   - ListDistinctValues serves an allow-list of document columns (doc_type,
//     doc_status, doc_number, description, from_entity, to_entity,
//     reference_number, entry_person, rev_number, account_number,
//     subdoctype, main_doc_number, date and entry_date as YYYY-MM-DD in UTC,
//     privileged and islocked as true/false, filesbelongto as folder ids,
//     only of folders the caller can see, as with include=folders)
//     or a custom-field column; only visible documents count; non-empty
//     values, case-insensitive substring search, ordered case-insensitively
//     (custom numbers numerically); limit 1..500, default 100.
//   - GetIndexDocument (internal) returns metadata with the current file,
//     rev, group and folder ids, or deleted=true for a missing or trashed
//     id; custom
//     fields are not part of it (the search engine does not index them).
//     GetIndexDocuments answers the same for up to 1,000 ids in one
//     snapshot (four set-based queries), with current files of at most
//     inline_max_bytes (≤ 1 MiB) inline, and SetContentSources records up
//     to 1,000 content sources in one statement: the indexer loads a batch
//     with one call instead of two or three per document.
//     ListDocumentIds pages ids ascending (limit 1..10000, default 1000),
//     with the ids whose current file has no content source yet (unread).
//
// # Trash, purge and bulk operations
//
// DELETE moves a document to the trash (deleted_at), which every query
// leaves out through visibleSQL; restore clears it; purge deletes the
// blobs, then the rows, in crash-safe steps finished by a sweeper that
// also purges after DOCREPO_TRASH_RETENTION (trash.go). Bulk operations
// run the same code per document, a savepoint each (bulk.go).
//
// # Configuration
//
// Config.Register registers the settings: the common service settings, the
// folder and schema services' addresses, the upload limits, and the blob
// store (MinIO/S3 when MINIO_ENDPOINT is set, else DOCREPO_BLOB_DIR on local
// disk). Defaults and meanings: docs/configuration.md.
//
// # Benchmarks
//
// services/document/bench builds the gateway, folder, schema and document
// binaries, starts them as separate processes on a fresh pgtest database
// with blobs on local disk, uploads a file of DOCREPO_BENCH_BYTES (1 GiB by
// default) through the gateway as a streamed multipart body, and compares
// the time with writing the same bytes (hashed the same way) straight into
// a disk store on the same file system, before and after the upload. It
// reports throughput, CPU seconds per GiB and the peak RSS (VmHWM from
// /proc/<pid>/status) of the gateway and document processes:
//
//	go test ./services/document/bench -run '^$' -bench Upload -benchtime 1x -v
//
// DOCREPO_BENCH_DIR=/dev/shm takes the disk out of the comparison.
//
// Measured on the 2-core development machine, shared with other engineers
// (load average 14 to 22 during the later runs, so absolute speeds vary by a
// factor of three between runs; the ratio, the CPU time and the memory are
// the stable numbers):
//
//	run                       via gateway   direct    ratio   CPU s/GiB gw / doc   VmHWM gw / doc
//	1 GiB, disk, quiet        168 MB/s      242 MB/s  0.69    -                    33 / 47 MiB
//	1 GiB, disk, quiet (2nd)  352 MB/s      438 MB/s  0.80    2.3 / 2.1            39 / 50 MiB
//	1 GiB, disk, loaded        67 MB/s       44 MB/s  1.52    3.7 / 5.0            33 / 50 MiB
//	1 GiB, disk, loaded        62 MB/s       55 MB/s  1.13    4.1 / 5.5            33 / 45 MiB
//	1 GiB, /dev/shm, loaded   117 MB/s       97 MB/s  1.20    3.9 / 4.0            33 / 44 MiB
//	64 MiB, disk              174 MB/s      425 MB/s  0.41    -                    32 / 41 MiB
//
// On 2026-11-25, quiet machine, side by side (two runs each, alternating),
// upload chunks of 256 KiB and of just under 1 MiB (gRPC's 1 MiB buffer
// tier, cleared whole on every use):
//
//	1 GiB, /dev/shm, 256 KiB  282, 305 MB/s   925, 976  0.31    2.7-2.8 / 2.9-3.2    -
//	1 GiB, /dev/shm, 1 MiB    360, 393 MB/s   967, 964  0.37-0.41 2.1-2.3 / 2.3-2.5  -
//	1 GiB, disk, 1 MiB        262-288 MB/s    659-682   0.39-0.44 2.4-2.8 / 2.8-2.9  45-47 / 53-54 MiB
//
// Downloads, the same change (1 GiB read back through the gateway into
// SHA-256, /dev/shm, two runs each): 367-394 → 445-484 MB/s, CPU
// gateway 2.1-2.2 → 1.7-1.8 s and document 1.8-1.9 → 1.5-1.6 s.
//
// The disk here now writes (and syncs) about 670 MB/s, so the upload, bound
// by the CPU of client, gateway and service on two cores, reaches about 0.4
// of it; the earlier 0.7-0.8 were against a slower disk.
// Peak memory does not grow with the file: both processes stay near their
// 64 MiB figures for 1 GiB (they start at about 18 and 27 MiB). Half of the
// gateway's CPU is mime/multipart, which parses about 600 MB/s on this
// machine; the document service's is gRPC, SHA-256 and the writes.
package documentsvc
