// Package ocrjobs is the indexer's durable queue of OCR work and its cache
// of OCR text, in Postgres (docs/design.md §5, "OCR off the event path").
//
// The event consumer never waits for OCR: it indexes a scan's text layer,
// enqueues a job and acknowledges the event. The queue keeps at most one
// job per document and engine: enqueueing a newer revision replaces the
// pending one (the newest revision wins), an older one changes nothing.
// OCR workers claim jobs with a lease they renew while they work; a
// worker that dies leaves a lease that expires, and the job is claimed
// again. Sooner: each worker process holds a worker lock for its life
// (HoldWorker, an advisory lock naming its instance, which its claims
// record), and releases the claims of workers whose lock is gone; a
// process alone on its queue releases every claim as it starts
// (ReleaseClaims). Jobs are handed out fairly: the owner with the fewest jobs
// running goes first, and among equals the one served longest ago, so
// one user's thousand scans queue behind another user's one.
//
// The cache keys OCR results by the file's SHA-256 and the settings that
// shape them (languages, resolution, orientation detection), so a
// metadata change, a second copy of the same file or a rebuilt index never
// runs OCR again for the same bytes.
//
// The tables live in the schema of the process that writes the search
// engine (search with the embedded engine, indexer with OpenSearch); the
// queue name is that engine's consumer name, so engines of their own keep
// queues of their own while sharing the cache.
//
// Cached text is pruned when unused for long (Prune), and erased at once
// when the last document with its file is purged (Erase, from the purged
// event's erased_filehashes).
package ocrjobs

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docrepo/docrepo/pkg/database"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations is the migration set of the queue and cache tables in schema,
// the schema of the process that writes the search engine.
func Migrations(schema string) database.MigrationSet {
	return database.Embedded(migrationFiles, schema, "ocrjobs")
}

// Store is the queue of one engine (its consumer name) and the cache.
type Store struct {
	pool  *pgxpool.Pool
	queue string
	// instance names this process's worker in its claims (claimed_by);
	// HoldWorker holds it as an advisory lock.
	instance int32
	alive    atomic.Bool
}

// New returns the store of queue in the pool's schema.
func New(pool *pgxpool.Pool, queue string) *Store {
	return &Store{pool: pool, queue: queue, instance: rand.Int32N(math.MaxInt32) + 1}
}

// workerLockClass is the first key of the advisory lock a worker process
// holds for its life (HoldWorker), its instance the second.
const workerLockClass = 0x6f63726a // "ocrj"

// HoldWorker holds this process's worker lock on a connection of its own
// until ctx ends, taking it again after a lost session, and every sweep
// (and once at once) releases the claims of workers that hold no lock
// (ReleaseDead), reporting how many to freed: a process killed while it
// ran OCR jobs leaves them to the others, or to its successor, at once
// rather than after their lease. Alive reports whether it holds the lock.
func (s *Store) HoldWorker(ctx context.Context, sweep time.Duration, freed func(int64), failed func(error)) {
	defer s.alive.Store(false)
	for ctx.Err() == nil {
		err := s.workerSession(ctx, sweep, freed)
		s.alive.Store(false)
		if ctx.Err() != nil {
			return
		}
		failed(err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// Alive reports whether HoldWorker holds the worker lock (claims made
// without it could be released by another worker as a dead one's).
func (s *Store) Alive() bool { return s.alive.Load() }

func (s *Store) workerSession(ctx context.Context, sweep time.Duration, freed func(int64)) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1::int4, $2::int4)`, int32(workerLockClass), s.instance); err != nil {
		return err
	}
	s.alive.Store(true)
	t := time.NewTicker(sweep)
	defer t.Stop()
	for {
		tag, err := conn.Exec(ctx, `UPDATE ocr_jobs j SET leased_until = NULL, lease = 0, claimed_by = NULL
			WHERE j.queue = $1 AND j.claimed_by IS NOT NULL AND j.leased_until > now() AND NOT EXISTS (
			    SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
			      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			      AND l.classid = $2::int4::oid AND l.objid = j.claimed_by::oid)`, s.queue, int32(workerLockClass))
		if err != nil {
			return fmt.Errorf("ocrjobs: release the claims of dead workers: %w", err)
		}
		if n := tag.RowsAffected(); n > 0 {
			freed(n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Job is one document's pending OCR.
type Job struct {
	DocID int64
	// Rev is the revision the job was enqueued for; the worker indexes the
	// document as it is when the job runs.
	Rev int64
	// Owner is who the fair share counts the job against.
	Owner string
	// Pages is how many pages need OCR (for status).
	Pages int
	// Attempts counts the claims of this job, this one included.
	Attempts int
	// Enqueued is when the document first waited.
	Enqueued time.Time
	lease    int64
}

// Enqueue adds jobs, one per document: a job for a document that has one
// pending replaces it when its revision is newer (keeping its place in the
// line), and is dropped otherwise.
func (s *Store) Enqueue(ctx context.Context, jobs []Job) error {
	newest := make(map[int64]Job, len(jobs))
	for _, j := range jobs {
		if old, ok := newest[j.DocID]; !ok || j.Rev > old.Rev {
			newest[j.DocID] = j
		}
	}
	if len(newest) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(newest))
	revs := make([]int64, 0, len(newest))
	owners := make([]string, 0, len(newest))
	pages := make([]int32, 0, len(newest))
	for _, j := range newest {
		ids, revs, owners, pages = append(ids, j.DocID), append(revs, j.Rev), append(owners, j.Owner), append(pages, int32(j.Pages))
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO ocr_jobs (queue, doc_id, rev, owner, pages)
		SELECT $1, * FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::integer[])
		ON CONFLICT (queue, doc_id) DO UPDATE
		    SET rev = excluded.rev, owner = excluded.owner, pages = excluded.pages, attempts = 0, not_before = now()
		    WHERE ocr_jobs.rev < excluded.rev`, s.queue, ids, revs, owners, pages)
	if err != nil {
		return fmt.Errorf("ocrjobs: enqueue %d jobs: %w", len(ids), err)
	}
	return nil
}

// Claim takes the next job for lease, or reports false when none is due.
// The next job belongs to the owner with the fewest jobs running, then the
// owner served longest ago, then it is the owner's oldest.
func (s *Store) Claim(ctx context.Context, lease time.Duration) (Job, bool, error) {
	var j Job
	token := rand.Int64()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `
			WITH busy AS (
			    SELECT owner, count(*) AS n FROM ocr_jobs
			    WHERE queue = $1 AND leased_until > now() GROUP BY owner
			), pick AS (
			    SELECT j.doc_id FROM ocr_jobs j
			    LEFT JOIN busy b ON b.owner = j.owner
			    LEFT JOIN ocr_turns t ON t.queue = j.queue AND t.owner = j.owner
			    WHERE j.queue = $1 AND (j.leased_until IS NULL OR j.leased_until <= now()) AND j.not_before <= now()
			    ORDER BY coalesce(b.n, 0), t.served_at NULLS FIRST, j.enqueued_at, j.doc_id
			    LIMIT 1
			    FOR UPDATE OF j SKIP LOCKED
			)
			UPDATE ocr_jobs j SET lease = $2, leased_until = now() + $3::interval, attempts = j.attempts + 1, claimed_by = $4
			FROM pick WHERE j.queue = $1 AND j.doc_id = pick.doc_id
			RETURNING j.doc_id, j.rev, j.owner, j.pages, j.attempts, j.enqueued_at`,
			s.queue, token, lease, s.instance).Scan(&j.DocID, &j.Rev, &j.Owner, &j.Pages, &j.Attempts, &j.Enqueued)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO ocr_turns (queue, owner, served_at) VALUES ($1, $2, clock_timestamp())
			ON CONFLICT (queue, owner) DO UPDATE SET served_at = excluded.served_at`, s.queue, j.Owner)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return Job{}, false, nil
	}
	if err != nil {
		return Job{}, false, fmt.Errorf("ocrjobs: claim: %w", err)
	}
	j.lease = token
	return j, true, nil
}

// Extend renews the claim on j for lease; false means the claim was lost
// (it expired and another worker took the job).
func (s *Store) Extend(ctx context.Context, j Job, lease time.Duration) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE ocr_jobs SET leased_until = now() + $4::interval
		WHERE queue = $1 AND doc_id = $2 AND lease = $3`, s.queue, j.DocID, j.lease, lease)
	if err != nil {
		return false, fmt.Errorf("ocrjobs: extend the claim on %d: %w", j.DocID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Done removes a finished job. When a newer revision was enqueued while it
// ran, the job stays for that revision and is free to be claimed at once.
func (s *Store) Done(ctx context.Context, j Job) error {
	_, err := s.pool.Exec(ctx, `
		WITH gone AS (
		    DELETE FROM ocr_jobs WHERE queue = $1 AND doc_id = $2 AND lease = $3 AND rev <= $4 RETURNING 1
		)
		UPDATE ocr_jobs SET leased_until = NULL, lease = 0, claimed_by = NULL
		WHERE queue = $1 AND doc_id = $2 AND lease = $3 AND NOT EXISTS (SELECT 1 FROM gone)`,
		s.queue, j.DocID, j.lease, j.Rev)
	if err != nil {
		return fmt.Errorf("ocrjobs: finish %d: %w", j.DocID, err)
	}
	return nil
}

// Retry gives a job back to be claimed again after delay.
func (s *Store) Retry(ctx context.Context, j Job, delay time.Duration) error {
	_, err := s.pool.Exec(ctx, `UPDATE ocr_jobs SET leased_until = NULL, lease = 0, claimed_by = NULL, not_before = now() + $4::interval
		WHERE queue = $1 AND doc_id = $2 AND lease = $3`, s.queue, j.DocID, j.lease, delay)
	if err != nil {
		return fmt.Errorf("ocrjobs: retry %d: %w", j.DocID, err)
	}
	return nil
}

// ReleaseClaims gives back every claim on the queue's jobs, each free to
// be claimed at once, and returns how many there were. Only a process
// that alone works the queue may call it, at its start: the claims are
// then a killed predecessor's, which would otherwise hold its jobs until
// their leases expire.
func (s *Store) ReleaseClaims(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE ocr_jobs SET leased_until = NULL, lease = 0, claimed_by = NULL
		WHERE queue = $1 AND leased_until > now()`, s.queue)
	if err != nil {
		return 0, fmt.Errorf("ocrjobs: release the claims: %w", err)
	}
	return tag.RowsAffected(), nil
}

// OwnerStatus is one owner's part of the queue.
type OwnerStatus struct {
	Owner            string
	Queued, Running  int
	PagesQueued      int
	OldestQueuedFrom time.Time
}

// Status is the queue's state.
type Status struct {
	Queued, Running int
	// Owners are the owners with jobs, most queued first (at most
	// statusOwners of them).
	Owners []OwnerStatus
}

// statusOwners bounds the owners Status lists.
const statusOwners = 20

// Status reports the jobs queued and running, by owner.
func (s *Store) Status(ctx context.Context) (Status, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT owner,
		       count(*) FILTER (WHERE leased_until IS NULL OR leased_until <= now()),
		       count(*) FILTER (WHERE leased_until > now()),
		       coalesce(sum(pages) FILTER (WHERE leased_until IS NULL OR leased_until <= now()), 0),
		       min(enqueued_at)
		FROM ocr_jobs WHERE queue = $1 GROUP BY owner ORDER BY 2 DESC, 1`, s.queue)
	if err != nil {
		return Status{}, fmt.Errorf("ocrjobs: status: %w", err)
	}
	var st Status
	for rows.Next() {
		var o OwnerStatus
		if err := rows.Scan(&o.Owner, &o.Queued, &o.Running, &o.PagesQueued, &o.OldestQueuedFrom); err != nil {
			return Status{}, fmt.Errorf("ocrjobs: status: %w", err)
		}
		st.Queued += o.Queued
		st.Running += o.Running
		if len(st.Owners) < statusOwners {
			st.Owners = append(st.Owners, o)
		}
	}
	if err := rows.Err(); err != nil {
		return Status{}, fmt.Errorf("ocrjobs: status: %w", err)
	}
	return st, nil
}

// Text is a cached OCR result: the file's whole extracted text (its text
// layer and the OCR of the pages that needed it).
type Text struct {
	Content string
	// Source is the content source (text, ocr, none).
	Source string
	// Pages counts the pages OCR read; Failed those it could not, and
	// Failure says why the first failed.
	Pages, Failed int
	Failure       string
}

// Cached returns the OCR result of the file with SHA-256 filehash read
// with settings, if there is one, and marks it used.
func (s *Store) Cached(ctx context.Context, filehash, settings string) (Text, bool, error) {
	var t Text
	err := s.pool.QueryRow(ctx, `UPDATE ocr_text SET used_at = now() WHERE filehash = $1 AND settings = $2
		RETURNING content, source, pages, failed, failure`, filehash, settings).
		Scan(&t.Content, &t.Source, &t.Pages, &t.Failed, &t.Failure)
	if errors.Is(err, pgx.ErrNoRows) {
		return Text{}, false, nil
	}
	if err != nil {
		return Text{}, false, fmt.Errorf("ocrjobs: cached text of %s: %w", filehash, err)
	}
	return t, true, nil
}

// Put stores the OCR result of a file.
func (s *Store) Put(ctx context.Context, filehash, settings string, t Text) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO ocr_text (filehash, settings, content, source, pages, failed, failure) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (filehash, settings) DO UPDATE SET content = excluded.content, source = excluded.source,
		    pages = excluded.pages, failed = excluded.failed, failure = excluded.failure, used_at = now()`,
		filehash, settings, t.Content, t.Source, t.Pages, t.Failed, t.Failure)
	if err != nil {
		return fmt.Errorf("ocrjobs: cache the text of %s: %w", filehash, err)
	}
	return nil
}

// Prune removes cached results not used for unused, and returns how many.
func (s *Store) Prune(ctx context.Context, unused time.Duration) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM ocr_text WHERE used_at < now() - $1::interval`, unused)
	if err != nil {
		return 0, fmt.Errorf("ocrjobs: prune the cache: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Erase removes the cached OCR results of the files with SHA-256
// filehashes, whatever settings read them, and returns how many: a purge
// erases what OCR read from files no document has any more.
func (s *Store) Erase(ctx context.Context, filehashes []string) (int64, error) {
	if len(filehashes) == 0 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM ocr_text WHERE filehash = ANY($1)`, filehashes)
	if err != nil {
		return 0, fmt.Errorf("ocrjobs: erase the text of %d files: %w", len(filehashes), err)
	}
	return tag.RowsAffected(), nil
}
