package documentsvc

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/events"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/outbox"
)

// Folders belong to the folder service. This service stores the folder ids
// of its documents' assignments and learns of deleted folders from the
// folder service's folder.deleted events (docs/architecture.md):
//
//   - folder_refs has a row per folder a document was ever assigned to;
//     the event marks it deleted and removes the folder's assignments in
//     one transaction (each removal bumps the document's rev and emits
//     folders_changed, so search follows);
//   - an assignment holds the folder's row FOR SHARE and refuses a deleted
//     folder, so an upload racing a deletion either commits before the
//     removal (and is removed with the others) or sees the folder gone.

// folderConsumer is the durable JetStream consumer through which the
// document service hears of deleted folders.
const folderConsumer = "document-folder-deleted"

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
	slices.Sort(ids) // lock rows in one order, whatever the event's
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO folder_refs (folder_id, deleted, deleted_at)
			SELECT unnest($1::bigint[]), true, now()
			ON CONFLICT (folder_id) DO UPDATE SET deleted = true,
				deleted_at = coalesce(folder_refs.deleted_at, excluded.deleted_at)`, ids); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM document_folders WHERE folder_id = ANY($1)`, ids)
		return err
	})
}

// CountFolderDocuments counts the caller's visible documents assigned to
// any of the folders.
func (s *Service) CountFolderDocuments(ctx context.Context, req *documentv1.CountFolderDocumentsRequest) (*documentv1.CountFolderDocumentsResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if len(req.GetFolderIds()) > maxCountFolders {
		return nil, apierr.Invalid("at most %d folder ids per call", maxCountFolders)
	}
	resp := &documentv1.CountFolderDocumentsResponse{}
	err = s.pool.QueryRow(ctx, `SELECT count(DISTINCT df.doc_id)::int FROM document_folders df
		JOIN documents d ON d.id = df.doc_id
		WHERE df.folder_id = ANY($3) AND `+visibleSQL, p.Unrestricted(), p.GroupIDs, req.GetFolderIds()).Scan(&resp.Count)
	if err != nil {
		return nil, internal(err)
	}
	return resp, nil
}

// ConsumeFolderEvents removes the assignments of deleted folders as the
// folder service's folder.deleted events arrive, until ctx ends. It waits
// for NATS and the stream when they are not there yet, and retries a
// failed event with a back-off (the event stays unacknowledged).
// streamOpts are those of the relay (the stream's replicas).
func (s *Service) ConsumeFolderEvents(ctx context.Context, js jetstream.JetStream, streamOpts ...outbox.StreamOption) error {
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
	<-ctx.Done()
	cc.Stop()
	return nil
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
				Durable:       folderConsumer,
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
