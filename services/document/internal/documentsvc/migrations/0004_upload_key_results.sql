-- An Idempotency-Key's replay answers the first upload's result, whatever
-- happened to the document since (a new version moves its first file to
-- file_archive, a PATCH changes its description). The result is kept with
-- the key instead of being looked up in tables that change.
ALTER TABLE upload_keys
    ADD COLUMN IF NOT EXISTS image_name  text,
    ADD COLUMN IF NOT EXISTS description text,
    ADD COLUMN IF NOT EXISTS doc_number  text;

-- Keys from before: the file's name from where it is now (current or
-- archived), the description as it is now (the first one is not kept
-- anywhere else).
UPDATE upload_keys k SET
    image_name = coalesce(
        (SELECT lf.image_name FROM linked_files lf WHERE lf.ownid = k.linked_file_id),
        (SELECT a.image_name FROM file_archive a WHERE a.former_ownid = k.linked_file_id AND a.doc_id = k.doc_id
            ORDER BY a.own_id LIMIT 1), ''),
    description = d.description,
    doc_number = d.doc_number
FROM documents d
WHERE d.id = k.doc_id AND k.image_name IS NULL;

ALTER TABLE upload_keys ALTER COLUMN image_name SET NOT NULL, ALTER COLUMN description SET NOT NULL;
