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
	"github.com/jackc/pgx/v5/pgconn"

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
	// folders_changed, customfields_changed, deleted, restored, purged
	// (documents); created, moved, deleted (folders).
	Kind string
	// Rev is the document's revision after the write (documents only).
	Rev         int64
	ActorUserID int64
	RequestID   string
	// FolderIDs lists every folder a folder deletion removed.
	FolderIDs []int64
	// GroupIDs (folders) are the folder's groups: who may hear of it
	// (FolderEvent.group_ids).
	GroupIDs []int64
	// Filehashes (documents, purged) lists the SHA-256 of the purged
	// files no other document has: consumers erase what they derived
	// from them (DocumentEvent.erased_filehashes).
	Filehashes []string
}

// Subject is the NATS subject an event is published on.
func (e Event) Subject() string { return events.Subject(e.Aggregate, e.Kind) }

// Insert adds e to the outbox inside tx. Actor and request id default to the
// caller of ctx. The aggregate must be document or folder, and the kind a
// single subject token (see events.ValidKind).
func Insert(ctx context.Context, tx pgx.Tx, e Event) error {
	sql, args, err := insertStatement(ctx, e)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("outbox insert: %w", err)
	}
	return nil
}

// Queue is Insert as one statement of a batch that the caller sends in its
// transaction (pgx.Tx.SendBatch), so that a write and its event take one
// round trip.
func Queue(ctx context.Context, b *pgx.Batch, e Event) error {
	sql, args, err := insertStatement(ctx, e)
	if err != nil {
		return err
	}
	b.Queue(sql, args...).Exec(func(pgconn.CommandTag) error { return nil })
	return nil
}

// insertStatement checks e and returns the statement that records it.
func insertStatement(ctx context.Context, e Event) (string, []any, error) {
	if e.Aggregate != AggregateDocument && e.Aggregate != AggregateFolder {
		return "", nil, fmt.Errorf("outbox insert: unknown aggregate %q", e.Aggregate)
	}
	if !events.ValidKind(e.Kind) {
		return "", nil, fmt.Errorf("outbox insert: invalid %s event kind %q", e.Aggregate, e.Kind)
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
	if e.Filehashes == nil {
		e.Filehashes = []string{}
	}
	if e.GroupIDs == nil {
		e.GroupIDs = []int64{}
	}
	return `INSERT INTO outbox (aggregate, aggregate_id, kind, rev, actor_user_id, request_id, folder_ids, filehashes, traceparent, group_ids)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		[]any{e.Aggregate, e.AggregateID, e.Kind, e.Rev, e.ActorUserID, e.RequestID, e.FolderIDs, e.Filehashes, tracing.Traceparent(ctx), e.GroupIDs}, nil
}
