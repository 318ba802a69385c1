-- Where the indexer got each current file's searchable text from (GET's
-- content_source): 'text' (the file's own text), 'ocr' (read from page
-- images), 'none' (no text). NULL until the indexer has read the file; a new
-- version is a new row and starts NULL again.
ALTER TABLE linked_files ADD COLUMN IF NOT EXISTS content_source text
    CHECK (content_source IN ('text', 'ocr', 'none'));
