-- The OCR work an indexer owes its search engine, and OCR text by file
-- content. The set lives in the schema of the process that writes the
-- engine: search (embedded engine) or indexer (OpenSearch).
--
-- One row per document and engine (queue = the indexer's durable consumer
-- name): a newer revision replaces the row's rev, so at most one job per
-- document is ever pending and the newest revision wins.
CREATE TABLE IF NOT EXISTS ocr_jobs (
    queue        text        NOT NULL,
    doc_id       bigint      NOT NULL,
    rev          bigint      NOT NULL,
    -- Fair share: jobs are handed out by owner (the document's entry
    -- person), the owner with the fewest jobs running and served longest
    -- ago first.
    owner        text        NOT NULL DEFAULT '',
    pages        integer     NOT NULL DEFAULT 0,
    enqueued_at  timestamptz NOT NULL DEFAULT now(),
    not_before   timestamptz NOT NULL DEFAULT now(),
    attempts     integer     NOT NULL DEFAULT 0,
    -- A claim: its random token and until when it holds (renewed while
    -- the job runs; an expired claim is taken again).
    lease        bigint      NOT NULL DEFAULT 0,
    leased_until timestamptz,
    PRIMARY KEY (queue, doc_id)
);

-- When each owner was last handed a job (round robin among owners).
CREATE TABLE IF NOT EXISTS ocr_turns (
    queue     text        NOT NULL,
    owner     text        NOT NULL,
    served_at timestamptz NOT NULL,
    PRIMARY KEY (queue, owner)
);

-- OCR results by file content (SHA-256, hex) and the settings that shape
-- them (languages, resolution, orientation detection): a document whose
-- metadata changed, a copy of a file in another document, or a rebuilt
-- index never runs OCR again for the same bytes.
CREATE TABLE IF NOT EXISTS ocr_text (
    filehash   text        NOT NULL,
    settings   text        NOT NULL,
    content    text        NOT NULL,
    source     text        NOT NULL,
    pages      integer     NOT NULL DEFAULT 0,
    failed     integer     NOT NULL DEFAULT 0,
    failure    text        NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    used_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (filehash, settings)
);
CREATE INDEX IF NOT EXISTS ocr_text_used_idx ON ocr_text (used_at);
