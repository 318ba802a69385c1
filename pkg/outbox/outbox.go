// Package outbox is docrepo's transactional outbox. A write that others must
// hear about calls Insert inside its own Postgres transaction, so the event
// exists if and only if the write committed. A Relay publishes pending rows
// to NATS JetStream (stream DOCREPO, subjects docrepo.>, see EnsureStream)
// with Nats-Msg-Id set to the row id, so a row published twice (a relay
// dying between publish and marking the row) is stored once by JetStream's
// duplicate window.
//
// The wire format (subjects, headers, protobuf payloads) and the decoders
// consumers use live in package events.
package outbox

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/events"
	"github.com/docrepo/docrepo/pkg/logging"
	"github.com/docrepo/docrepo/pkg/tracing"
)

// Aggregates.
const (
	AggregateDocument = events.AggregateDocument
	AggregateFolder   = events.AggregateFolder
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
func (e Event) Subject() string { return events.Subject(e.Aggregate, e.Kind) }

// Insert adds e to the outbox inside tx. Actor and request id default to the
// caller of ctx. The aggregate must be document or folder, and the kind a
// single subject token (see events.ValidKind).
func Insert(ctx context.Context, tx pgx.Tx, e Event) error {
	if e.Aggregate != AggregateDocument && e.Aggregate != AggregateFolder {
		return fmt.Errorf("outbox insert: unknown aggregate %q", e.Aggregate)
	}
	if !events.ValidKind(e.Kind) {
		return fmt.Errorf("outbox insert: invalid %s event kind %q", e.Aggregate, e.Kind)
	}
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
	_, err := tx.Exec(ctx, `INSERT INTO outbox (aggregate, aggregate_id, kind, rev, actor_user_id, request_id, folder_ids, traceparent)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, e.Aggregate, e.AggregateID, e.Kind, e.Rev, e.ActorUserID, e.RequestID, e.FolderIDs,
		tracing.Traceparent(ctx))
	if err != nil {
		return fmt.Errorf("outbox insert: %w", err)
	}
	return nil
}
