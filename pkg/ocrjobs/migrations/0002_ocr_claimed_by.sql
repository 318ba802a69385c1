-- Which worker process holds a job's claim (its instance, held as an
-- advisory lock for its life; NULL when unclaimed or claimed before this
-- column): a claim whose worker died is released by a live worker of the
-- queue at once instead of after its lease (ReleaseDead).
ALTER TABLE ocr_jobs ADD COLUMN IF NOT EXISTS claimed_by bigint;
