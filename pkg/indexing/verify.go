package indexing

import (
	"context"
	"fmt"
	"time"

	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
)

// Anti-entropy: whatever happened to the events — a message lost, a backup
// of the database restored, an index restored from an older copy, a crash
// anywhere — Verify proves the index complete or makes it so. It reads the
// revision of every document the engine holds, then pages through the
// documents of record (id and rev, from the document service) and repairs
// the difference without a full rebuild:
//
//   - missing: the document exists, the index lacks it → indexed;
//   - stale: the index holds an older revision → indexed;
//   - diverged: the index holds a newer revision than the documents of
//     record (a database backup was restored). The engine keeps only newer
//     revisions, so this is counted and logged, not repaired: a full
//     rebuild (docrepoctl reindex -recreate) makes the index follow the
//     restored documents;
//   - deleted: the index holds a document that no longer exists → removed;
//   - unread: the index holds the current revision, but written without
//     its file's text (the download failed on every attempt), which the
//     document service tells by the file's missing content source → the
//     file is read and the revision written again.
//
// The engine is read first: a document created after that read is found
// in the documents of record and indexed (idempotent by revision), never
// mistaken for a deleted one.

// VerifyResult counts what a Verify pass found and repaired.
type VerifyResult struct {
	// Checked counts documents of record compared.
	Checked                           int64
	Missing, Stale, Diverged, Deleted int64
	// Unread counts documents indexed without their file's text, read again.
	Unread int64
	// Failed counts repairs that failed (the next pass tries again).
	Failed int64
}

// Repaired is the number of documents repaired.
func (r VerifyResult) Repaired() int64 {
	return r.Missing + r.Stale + r.Deleted + r.Unread - r.Failed
}

// Verify compares the index with the documents of record and repairs the
// differences. report, when not nil, receives the progress as Reindex's
// does.
func (ix *Indexer) Verify(ctx context.Context, report func(VerifyResult, int64, bool) error) (VerifyResult, error) {
	var res VerifyResult
	started := time.Now()
	ectx, cancel := context.WithTimeout(ctx, ix.o.EngineTimeout)
	held, err := ix.o.Engine.Revisions(ectx)
	cancel()
	if err != nil {
		return res, fmt.Errorf("indexing: verify: read the index: %w", err)
	}
	// Where the pass's time goes, for its log line: reading the index,
	// listing the documents of record, repairing.
	readTook := time.Since(started)
	var listTook, repairTook time.Duration
	var lastReport time.Time
	var total int64
	var after int64
	for {
		cctx, cancel := context.WithTimeout(ctx, ix.o.CallTimeout)
		listStart := time.Now()
		page, err := ix.o.Source.ListDocumentIds(cctx, &documentv1.ListDocumentIdsRequest{AfterId: after, Limit: verifyPage})
		listTook += time.Since(listStart)
		cancel()
		if err != nil {
			return res, fmt.Errorf("indexing: verify: list documents after %d: %w", after, err)
		}
		if after == 0 {
			total = page.GetTotal() // the first page's only
		}
		total = max(total, res.Checked)
		ids, revs := page.GetIds(), page.GetRevs()
		if len(ids) == 0 {
			break
		}
		if len(revs) != len(ids) {
			return res, fmt.Errorf("indexing: verify: the document service sent %d revisions for %d ids (an older version?)", len(revs), len(ids))
		}
		unread := make(map[int64]bool, len(page.GetUnreadIds()))
		for _, id := range page.GetUnreadIds() {
			unread[id] = true
		}
		var repair []Item
		for i, id := range ids {
			rev := revs[i]
			stored, ok := held[id]
			delete(held, id)
			switch {
			case !ok:
				res.Missing++
				repair = append(repair, Item{ID: id, Rev: rev, DeferOCR: ix.defersOCR()})
			case stored < rev:
				res.Stale++
				repair = append(repair, Item{ID: id, Rev: rev, DeferOCR: ix.defersOCR()})
			case stored == rev && unread[id]:
				res.Unread++
				repair = append(repair, Item{ID: id, Rev: rev, Reread: true, DeferOCR: ix.defersOCR()})
			case stored > rev:
				res.Diverged++
				ix.log.Warn("verify: the index holds a newer revision than the documents of record (a restored backup?); "+
					"docrepoctl reindex -recreate rebuilds the index from them", "doc_id", id, "indexed_rev", stored, "rev", rev)
			}
		}
		res.Checked += int64(len(ids))
		if len(repair) > 0 {
			repairStart := time.Now()
			for _, r := range ix.Index(ctx, repair) {
				if r.Outcome == Failed {
					res.Failed++
					continue
				}
				metricIndexed.WithLabelValues(r.Outcome.String()).Inc()
			}
			repairTook += time.Since(repairStart)
		}
		after = ids[len(ids)-1]
		if report != nil && time.Since(lastReport) >= progressMinGap {
			lastReport = time.Now()
			if err := report(res, total, false); err != nil {
				return res, err
			}
		}
	}
	// What the index still holds has no document of record.
	removeStart := time.Now()
	for id, rev := range held {
		res.Deleted++
		if err := ix.remove(ctx, id, rev); err != nil {
			res.Failed++
			ix.log.Warn("verify: removing a deleted document failed", "doc_id", id, "error", err)
			continue
		}
		metricIndexed.WithLabelValues(Deleted.String()).Inc()
	}
	repairTook += time.Since(removeStart)
	for kind, n := range map[string]int64{"missing": res.Missing, "stale": res.Stale, "deleted": res.Deleted, "unread": res.Unread} {
		metricRepaired.WithLabelValues(kind).Add(float64(n))
	}
	metricDiverged.Set(float64(res.Diverged))
	metricVerified.SetToCurrentTime()
	ix.log.Info("verify: index compared with the documents of record", "checked", res.Checked, "missing", res.Missing,
		"stale", res.Stale, "diverged", res.Diverged, "deleted", res.Deleted, "unread", res.Unread, "failed", res.Failed,
		"took", time.Since(started).Round(time.Millisecond), "read_index", readTook.Round(time.Millisecond),
		"list_documents", listTook.Round(time.Millisecond), "repair", repairTook.Round(time.Millisecond))
	if report != nil {
		return res, report(res, res.Checked, true)
	}
	return res, nil
}

// DefaultVerifyInterval is the default of Settings.VerifyInterval.
const DefaultVerifyInterval = time.Hour

// DefaultVerifyRetry and DefaultVerifyRetryMax are the defaults of
// Options.VerifyRetry and Options.VerifyRetryMax.
const (
	DefaultVerifyRetry    = time.Second
	DefaultVerifyRetryMax = 5 * time.Minute
)

// VerifyLoop runs Verify at start-up and then every interval until ctx
// ends. A failed pass — at start-up the document service is often not
// listening yet — is tried again after Options.VerifyRetry, doubling up
// to Options.VerifyRetryMax (never beyond interval), until one succeeds;
// then the regular schedule resumes. The first failure of a run of them
// is logged at WARN, the retries after it at DEBUG, and the recovery at
// INFO.
func (ix *Indexer) VerifyLoop(ctx context.Context, interval time.Duration) {
	failures := 0
	retry := ix.o.VerifyRetry
	for {
		wait := interval
		if _, err := ix.Verify(ctx, nil); err != nil && ctx.Err() == nil {
			wait = min(retry, interval)
			retry = min(2*retry, ix.o.VerifyRetryMax)
			if failures == 0 {
				ix.log.Warn("verify: pass failed; retrying with back-off until it succeeds", "error", err,
					"retry_in", wait, "max_retry_in", min(ix.o.VerifyRetryMax, interval))
			} else {
				ix.log.Debug("verify: pass failed again", "error", err, "attempt", failures+1, "retry_in", wait)
			}
			failures++
		} else if err == nil && failures > 0 {
			ix.log.Info("verify: pass succeeded after failing", "failed_attempts", failures, "next_in", interval)
			failures, retry = 0, ix.o.VerifyRetry
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}
