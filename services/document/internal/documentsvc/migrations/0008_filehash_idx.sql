-- A purge asks which of its files no other document has
-- (erasedFilehashes, trash.go): by hash, in both file tables.
CREATE INDEX IF NOT EXISTS linked_files_filehash_idx ON linked_files (filehash);
CREATE INDEX IF NOT EXISTS file_archive_file_hash_idx ON file_archive (file_hash);
