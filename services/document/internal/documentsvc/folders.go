package documentsvc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/events"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	folderv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"
	"github.com/docrepo/docrepo/pkg/logging"
	"github.com/docrepo/docrepo/pkg/outbox"
	"github.com/docrepo/docrepo/pkg/visibility"
)

// Folders belong to the folder service. This service stores the folder ids
// of its documents' assignments and learns of deleted folders from the
// folder service: at once from its FoldersDeleted call, made before a
// deletion answers, and durably from its folder.deleted events, which
// also cover a call that failed (docs/architecture.md):
//
//   - folder_refs has a row per folder a document was ever assigned to;
//     the call or the event marks it deleted and removes the folder's assignments in
//     one transaction (each removal bumps the document's rev and emits
//     folders_changed, so search follows);
//   - an assignment holds the folder's row FOR SHARE and refuses a deleted
//     folder, so an upload racing a deletion either commits before the
//     removal (and is removed with the others) or sees the folder gone.

// FolderConsumer is the durable JetStream consumer through which the
// document service hears of deleted folders.
const FolderConsumer = "document-folder-deleted"

// maxCountFolders bounds CountFolderDocuments' folder list.
const maxCountFolders = 10000

// assignFolder assigns document docID to folderID inside tx, unless the
// folder is known to be deleted (404 Folder not found).
func assignFolder(ctx context.Context, tx pgx.Tx, docID, folderID int64) error {
	b := &pgx.Batch{}
	var refused bool
	queueAssignFolder(b, docID, folderID, &refused)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	if refused {
		return errFolderNotFound()
	}
	return nil
}

// queueAssignFolder queues the assignment of document docID to folderID
// onto b (run in a transaction), setting *refused when the folder is known
// to be deleted (the caller then fails with 404 Folder not found, which
// rolls the assignment back). The assignment reads the folder's row FOR
// SHARE, so a removal of the folder's assignments either waits for it or
// has already marked the folder deleted.
func queueAssignFolder(b *pgx.Batch, docID, folderID int64, refused *bool) {
	b.Queue(`INSERT INTO folder_refs (folder_id) VALUES ($1) ON CONFLICT DO NOTHING`, folderID)
	b.Queue(`INSERT INTO document_folders (doc_id, folder_id)
		SELECT $1, r.folder_id FROM folder_refs r WHERE r.folder_id = $2 AND NOT r.deleted FOR SHARE`, docID, folderID).
		Exec(func(ct pgconn.CommandTag) error {
			*refused = ct.RowsAffected() == 0
			return nil
		})
}

// forgetFolders marks the folders deleted and removes every assignment to
// them. It is idempotent: a redelivered event changes nothing more.
func (s *Service) forgetFolders(ctx context.Context, ids []int64) error {
	ids = slices.Clone(ids)
	slices.Sort(ids)          // lock rows in one order, whatever the event's
	ids = slices.Compact(ids) // an upsert may not touch a row twice
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO folder_refs (folder_id, deleted, deleted_at)
			SELECT unnest($1::bigint[]), true, now()
			ON CONFLICT (folder_id) DO UPDATE SET deleted = true,
				deleted_at = coalesce(folder_refs.deleted_at, excluded.deleted_at)`, ids); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `WITH gone AS (DELETE FROM document_folders WHERE folder_id = ANY($1) RETURNING doc_id, folder_id)
			SELECT doc_id, array_agg(folder_id ORDER BY folder_id) FROM gone GROUP BY doc_id ORDER BY doc_id`, ids)
		if err != nil {
			return err
		}
		type removal struct {
			docID   int64
			folders []int64
		}
		removed, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (removal, error) {
			var x removal
			return x, r.Scan(&x.docID, &x.folders)
		})
		if err != nil || len(removed) == 0 {
			return err
		}
		b := &pgx.Batch{}
		for _, r := range removed {
			if err := audit.Queue(ctx, b, audit.Entry{Action: "document.folders_changed", ObjectID: r.docID, Service: "document",
				Details: map[string]any{"removed_folder_ids": r.folders, "reason": "folder deleted"}}); err != nil {
				return err
			}
		}
		return tx.SendBatch(ctx, b).Close()
	})
}

// FoldersDeleted is the folder service telling, synchronously, what the
// folder.deleted event tells later: the folders are gone (forgetFolders).
// The folder service calls it after its deletion committed and before it
// answers, so that the client who deleted a folder is refused an upload
// into it at once, even when checkFolder remembers the folder as visible
// and the event is still on its way (docs/design.md §5). Idempotent: the
// event arriving afterwards changes nothing more.
func (s *Service) FoldersDeleted(ctx context.Context, req *documentv1.FoldersDeletedRequest) (*documentv1.FoldersDeletedResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if !p.HasScope(auth.ScopeInternal) { // the access rule's, should a handler be reached without the interceptor
		return nil, apierr.PermissionDenied("Missing required scope: %s", auth.ScopeInternal)
	}
	ids := req.GetFolderIds()
	switch {
	case len(ids) == 0:
		return nil, apierr.Invalid("folder_ids is required")
	case len(ids) > maxCountFolders:
		return nil, apierr.Invalid("at most %d folder ids per call", maxCountFolders)
	}
	for _, id := range ids {
		if id <= 0 {
			return nil, apierr.Invalid("folder ids are positive: %d", id)
		}
	}
	// The entries name the document service as the event handler's do,
	// not the folder service's credential: whichever of the two comes
	// first writes them, and they read the same. The request id is the
	// deletion's (the folder service passes it on).
	if err := s.forgetFolders(auth.WithPrincipal(ctx, nil), ids); err != nil {
		return nil, internal(err)
	}
	return &documentv1.FoldersDeletedResponse{}, nil
}

// CountFolderDocuments counts the caller's visible documents assigned to
// any of the folders the caller can see. Folders the caller cannot see
// count nothing: a visible document may sit in an invisible folder, and
// counting it would reveal the assignment GET's folders hides.
func (s *Service) CountFolderDocuments(ctx context.Context, req *documentv1.CountFolderDocumentsRequest) (*documentv1.CountFolderDocumentsResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if len(req.GetFolderIds()) > maxCountFolders {
		return nil, apierr.Invalid("at most %d folder ids per call", maxCountFolders)
	}
	ids, err := s.visibleFolderIDs(ctx, p, req.GetFolderIds())
	if err != nil {
		return nil, err
	}
	resp := &documentv1.CountFolderDocumentsResponse{}
	if len(ids) == 0 {
		return resp, nil
	}
	vis := visibility.Of(p)
	err = s.pool.QueryRow(ctx, `SELECT count(DISTINCT df.doc_id)::int FROM document_folders df
		JOIN documents d ON d.id = df.doc_id
		WHERE df.folder_id = ANY($3) AND `+visibleSQL(vis, 1), vis.Unrestricted, vis.GroupIDs, ids).Scan(&resp.Count)
	if err != nil {
		return nil, internal(err)
	}
	return resp, nil
}

// getFoldersBatch is the folder service's limit of ids per GetFolders call.
const getFoldersBatch = 1000

// visibleFolderIDs returns the ids among ids (deduplicated) of the folders
// the caller can see, asking the folder service as the caller, in batches,
// for those not remembered as visible (checkFolder's memory).
func (s *Service) visibleFolderIDs(ctx context.Context, p *auth.Principal, ids []int64) ([]int64, error) {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if p.Unrestricted() {
		return ids, nil
	}
	now := s.now()
	visible := make([]int64, 0, len(ids))
	var ask []int64
	for _, id := range ids {
		if s.visibleFolders.has(folderAnswerKey(p, id), now) {
			visible = append(visible, id)
		} else {
			ask = append(ask, id)
		}
	}
	for batch := range slices.Chunk(ask, getFoldersBatch) {
		resp, err := s.folders.GetFolders(ctx, &folderv1.GetFoldersRequest{FolderIds: batch})
		if err != nil {
			return nil, downstream(err, "folder service", errFolderNotFound())
		}
		for _, f := range resp.GetFolders() {
			visible = append(visible, f.GetFolderId())
			s.visibleFolders.add(folderAnswerKey(p, f.GetFolderId()), now)
		}
	}
	return visible, nil
}

// ConsumeFolderEvents removes the assignments of deleted folders as the
// folder service's folder.deleted events arrive, until ctx ends. It waits
// for NATS and the stream when they are not there yet, and retries a
// failed event with a back-off (the event stays unacknowledged). When the
// consumer or its stream vanish (a NATS server restarted with an empty
// store), it creates them again.
// streamOpts are those of the relay (the stream's replicas).
func (s *Service) ConsumeFolderEvents(ctx context.Context, js jetstream.JetStream, streamOpts ...outbox.StreamOption) error {
	for ctx.Err() == nil {
		cons, err := s.folderConsumer(ctx, js, streamOpts)
		if cons == nil {
			return err
		}
		cc, err := cons.Consume(func(m jetstream.Msg) { s.handleFolderEvent(ctx, m) },
			jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
				if ctx.Err() == nil {
					s.log.Warn("folder events consumer", "error", err)
				}
			}))
		if err != nil {
			return fmt.Errorf("document: consume folder events: %w", err)
		}
		s.waitConsumerLost(ctx, cons)
		cc.Stop()
	}
	return nil
}

// consumerCheckInterval is how often the folder events consumer checks
// that the server still has it.
const consumerCheckInterval = 2 * time.Second

// waitConsumerLost returns when ctx ends or the server says the consumer
// or its stream does not exist (a pull consumer whose stream vanished
// does not fail; it only stops delivering).
func (s *Service) waitConsumerLost(ctx context.Context, cons jetstream.Consumer) {
	t := time.NewTicker(consumerCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := cons.Info(ctx); errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
			s.log.Warn("the folder events consumer is gone (a NATS server that lost its store?); creating it again", "error", err)
			return
		}
	}
}

// folderConsumer creates (or finds) the durable consumer, retrying until
// the stream exists or ctx ends (then it returns nil, nil).
func (s *Service) folderConsumer(ctx context.Context, js jetstream.JetStream, streamOpts []outbox.StreamOption) (jetstream.Consumer, error) {
	wait := 100 * time.Millisecond
	for {
		stream, err := outbox.EnsureStream(ctx, js, streamOpts...)
		if err == nil {
			var cons jetstream.Consumer
			cons, err = stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
				Durable:       FolderConsumer,
				FilterSubject: events.Subject(events.AggregateFolder, events.KindDeleted),
				AckPolicy:     jetstream.AckExplicitPolicy,
				AckWait:       30 * time.Second,
			})
			if err == nil {
				return cons, nil
			}
		}
		if ctx.Err() != nil {
			return nil, nil
		}
		s.log.Warn("folder events consumer not ready; retrying", "error", err, "retry_in", wait)
		if !sleepCtx(ctx, wait) {
			return nil, nil
		}
		wait = min(2*wait, 10*time.Second)
	}
}

// handleFolderEvent applies one folder.deleted event and acknowledges it;
// a failure leaves it for redelivery after a delay, an undecodable message
// is terminated (it can never succeed).
func (s *Service) handleFolderEvent(ctx context.Context, m jetstream.Msg) {
	ev, err := events.DecodeFolderEvent(m)
	if err != nil {
		s.log.Error("dropping a message that is not a folder event", "subject", m.Subject(), "error", err)
		_ = m.Term()
		return
	}
	ids := ev.GetFolderIds()
	if len(ids) == 0 {
		ids = []int64{ev.GetFolderId()}
	}
	if rid := m.Headers().Get(events.HeaderRequestID); rid != "" {
		ctx = logging.WithRequestID(ctx, rid) // the deletion's request, in the audit entries
	}
	if err := s.forgetFolders(ctx, ids); err != nil {
		s.log.Warn("removing the assignments of deleted folders failed; will retry",
			"folder_id", ev.GetFolderId(), "folders", len(ids), "error", err)
		_ = m.NakWithDelay(2 * time.Second)
		return
	}
	if err := m.Ack(); err != nil {
		s.log.Warn("acknowledging a folder event failed; it will be redelivered (harmless)", "error", fmt.Errorf("ack: %w", err))
	}
}

// sleepCtx waits d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
