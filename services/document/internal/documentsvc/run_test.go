package documentsvc_test

import (
	"context"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/metadata"

	"github.com/docrepo/docrepo/pkg/config"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/events"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/grpcclient"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/testenv/natstest"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
	"github.com/docrepo/docrepo/services/document/internal/documentsvc"
)

// running is a document service run against a real JetStream.
type running struct {
	pool    *pgxpool.Pool
	nats    *natstest.Server
	docs    documentv1.DocumentServiceClient
	callCtx context.Context
	userID  int64
	docID   int64
}

// runWithNATS runs the document service with a document and a user who
// may write it, against an in-process NATS server.
func runWithNATS(t *testing.T) *running {
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t, documentsvc.Migrations()...)
	pool, err := database.Open(ctx, dbURL, documentsvc.Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	ids := identity.NewStore(pool)
	user, err := ids.CreateUser(ctx, "alice", []string{"editors"})
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := ids.CreateKey(ctx, "alice", []string{"documents_read", "documents_write"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var docID int64
	if err := pool.QueryRow(ctx, `WITH d AS (
			INSERT INTO documents (description, entry_person_id, entry_person) VALUES ('memo', $1, 'alice') RETURNING id)
		INSERT INTO document_groups (doc_id, group_id) SELECT d.id, g.id FROM d, identity.groups g WHERE g.name = 'editors'
		RETURNING doc_id`, user.ID).Scan(&docID); err != nil {
		t.Fatal(err)
	}
	nsrv := natstest.Start(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := documentsvc.Run(runCtx, documentsvc.Config{
			Common:     config.Common{DatabaseURL: dbURL, NATSURL: nsrv.URL(), LogLevel: "warn"},
			FolderAddr: "127.0.0.1:1",
			SchemaAddr: "127.0.0.1:1",
			BlobDir:    t.TempDir(),
			Listener:   lis,
			Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		})
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	conn, err := grpcclient.Dial(lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &running{pool: pool, nats: nsrv, docs: documentv1.NewDocumentServiceClient(conn),
		callCtx: metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token), userID: user.ID, docID: docID}
}

// TestRunPublishesEvents runs the service with a real JetStream: a write's
// outbox row is published by the service's relay as a document event
// carrying the document id, the new rev and the actor.
func TestRunPublishesEvents(t *testing.T) {
	ctx := context.Background()
	r := runWithNATS(t)
	pool, docID, docs, callCtx := r.pool, r.docID, r.docs, r.callCtx
	user := struct{ ID int64 }{r.userID}
	sub, err := r.nats.Connect(t).SubscribeSync("docrepo.document.>")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := docs.LockDocument(callCtx, &documentv1.LockDocumentRequest{DocId: docID})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.GetDocument().GetIslocked() {
		t.Fatalf("lock response = %v", resp)
	}
	msg, err := sub.NextMsg(20 * time.Second)
	if err != nil {
		t.Fatalf("no event published: %v", err)
	}
	ev, err := events.DecodeDocumentEvent(events.NATSMsg(msg))
	if err != nil {
		t.Fatal(err)
	}
	if msg.Subject != "docrepo.document.locked" || ev.GetDocId() != docID || ev.GetRev() != 2 ||
		ev.GetKind() != "locked" || ev.GetActorUserId() != user.ID || ev.GetEventId() <= 0 {
		t.Fatalf("event on %s = %v", msg.Subject, ev)
	}
	// The row is marked published.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var published bool
		if err := pool.QueryRow(ctx, `SELECT published_at IS NOT NULL FROM outbox WHERE id = $1`, ev.GetEventId()).Scan(&published); err != nil {
			t.Fatal(err)
		}
		if published {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("outbox row never marked published")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRunRecreatesTheStreamAfterNATSLostItsStore: the NATS server comes
// back with an empty store while the service runs; without a restart of
// the service the event stream and the folder events consumer exist
// again, and the next write's event is published.
func TestRunRecreatesTheStreamAfterNATSLostItsStore(t *testing.T) {
	ctx := context.Background()
	r := runWithNATS(t)
	js, err := jetstream.New(r.nats.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the folder events consumer", func() bool {
		_, err := js.Consumer(ctx, events.StreamName, documentsvc.FolderConsumer)
		return err == nil
	})
	r.nats.RestartEmpty(t)
	waitUntil(t, "the stream and the folder events consumer again", func() bool {
		_, err := js.Consumer(ctx, events.StreamName, documentsvc.FolderConsumer)
		return err == nil
	})
	sub, err := r.nats.Connect(t).SubscribeSync("docrepo.document.>")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.docs.LockDocument(r.callCtx, &documentv1.LockDocumentRequest{DocId: r.docID}); err != nil {
		t.Fatal(err)
	}
	msg, err := sub.NextMsg(20 * time.Second)
	if err != nil {
		t.Fatalf("no event published after the store was lost: %v", err)
	}
	if msg.Subject != "docrepo.document.locked" {
		t.Fatalf("event on %s", msg.Subject)
	}
	// The relay marks the row published once the recreated stream
	// acknowledged it.
	waitUntil(t, "the event stored and its row marked published", func() bool {
		var left int
		if err := r.pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE published_at IS NULL`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		stream, err := js.Stream(ctx, events.StreamName)
		if err != nil {
			return false
		}
		info, err := stream.Info(ctx)
		return err == nil && info.State.Msgs > 0 && left == 0
	})
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
