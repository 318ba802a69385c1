// Package outbox is docrepo's transactional outbox. A write that others must
// hear about calls Insert inside its own Postgres transaction, so the event
// exists if and only if the write committed. A Relay publishes pending rows
// to NATS JetStream (stream DOCREPO, subjects docrepo.>) with Nats-Msg-Id set
// to the row id, so a row published twice (a relay dying between publish and
// marking the row) is stored once by JetStream's duplicate window.
package outbox

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/logging"
)

// Aggregates.
const (
	AggregateDocument = "document"
	AggregateFolder   = "folder"
)

// Event is one row of the outbox.
type Event struct {
	Aggregate   string
	AggregateID int64
	// Kind: created, updated, file_replaced, locked, unlocked,
	// folders_changed, customfields_changed (documents); created, moved,
	// deleted (folders).
	Kind string
	// Rev is the document's revision after the write (documents only).
	Rev         int64
	ActorUserID int64
	RequestID   string
	// FolderIDs lists every folder a folder deletion removed.
	FolderIDs []int64
}

// Subject is the NATS subject an event is published on.
func (e Event) Subject() string { return "docrepo." + e.Aggregate + "." + e.Kind }


// Insert adds e to the outbox inside tx. Actor and request id default to the
// caller of ctx.
func Insert(ctx context.Context, tx pgx.Tx, e Event) error {
	if e.ActorUserID == 0 {
		if p, ok := auth.FromContext(ctx); ok {
			e.ActorUserID = p.UserID
		}
	}
	if e.RequestID == "" {
		e.RequestID = logging.RequestID(ctx)
	}
	if e.FolderIDs == nil {
		e.FolderIDs = []int64{}
	}
	_, err := tx.Exec(ctx, `INSERT INTO outbox (aggregate, aggregate_id, kind, rev, actor_user_id, request_id, folder_ids)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, e.Aggregate, e.AggregateID, e.Kind, e.Rev, e.ActorUserID, e.RequestID, e.FolderIDs)
	if err != nil {
		return fmt.Errorf("outbox insert: %w", err)
	}
	return nil
}
