package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/auth"
	rest "github.com/docrepo/docrepo/pkg/client"
	"github.com/docrepo/docrepo/pkg/events"
	"github.com/docrepo/docrepo/pkg/webhook"
)

// faultReceiver is a webhook endpoint that can hold one request open (the
// delivery in flight when the sender is killed) and records, per
// document, the events it accepted in the order they came.
type faultReceiver struct {
	t      *testing.T
	mu     sync.Mutex
	secret string
	byDoc  map[int64][]hookEvent
	hold   bool           // the next request is held open, not accepted
	held   chan hookEvent // a held request's event, once it came
	srv    *httptest.Server
}

func newFaultReceiver(t *testing.T) *faultReceiver {
	h := &faultReceiver{t: t, byDoc: map[int64][]hookEvent{}, held: make(chan hookEvent, 1)}
	release := make(chan struct{})
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		if err := webhook.Verify(h.secret, r.Header, body, time.Now(), webhook.DefaultTolerance); err != nil {
			h.mu.Unlock()
			h.t.Errorf("a request with a bad signature (%v): %s", err, body)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var ev struct {
			Type string `json:"type"`
			Data struct {
				DocID int64 `json:"doc_id"`
				Rev   int64 `json:"rev"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &ev); err != nil {
			h.t.Errorf("body %s: %v", body, err)
		}
		e := hookEvent{ID: r.Header.Get("webhook-id"), Type: ev.Type, Doc: ev.Data.DocID, Rev: ev.Data.Rev}
		if h.hold {
			// Held until the sender is gone: never answered, so never
			// accepted; it must come again.
			h.hold = false
			h.mu.Unlock()
			h.held <- e
			select {
			case <-r.Context().Done():
			case <-release:
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		h.byDoc[e.Doc] = append(h.byDoc[e.Doc], e)
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(func() { close(release); h.srv.Close() })
	return h
}

// got reports whether the event with webhook-id id was accepted.
func (h *faultReceiver) got(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, evs := range h.byDoc {
		for _, e := range evs {
			if e.ID == id {
				return true
			}
		}
	}
	return false
}

// check compares what came with want (each document's event types in the
// order they happened): every event at least once, each document's in
// order (an event sent again may come again later, as at-least-once
// allows, but no event comes before an earlier one of its document).
func (h *faultReceiver) check(want map[int64][]string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for doc, types := range want {
		var firsts []hookEvent
		seen := map[string]bool{}
		for _, e := range h.byDoc[doc] {
			if !seen[e.ID] {
				seen[e.ID] = true
				firsts = append(firsts, e)
			}
		}
		if len(firsts) < len(types) {
			return fmt.Errorf("document %d: %d of its %d events came: %+v", doc, len(firsts), len(types), firsts)
		}
		for i, e := range firsts {
			if i >= len(types) || e.Type != types[i] || (i > 0 && e.Rev <= firsts[i-1].Rev) {
				return fmt.Errorf("document %d: events came as %+v, want the types %v in order of revision", doc, firsts, types)
			}
		}
	}
	return nil
}

// TestWebhooksSurviveKilledDocumentService kills the document service
// (the webhook consumer and sender) with SIGKILL at its two busy moments
// and checks what a receiver relies on: every event delivered at least
// once, each document's in order.
//
//  1. Mid-delivery: the receiver holds a request open; the service is
//     killed while it waits for the answer. The delivery, never
//     acknowledged by the receiver, is sent again by the restarted
//     service, and the document's later events wait for it. Before the
//     fix it waited out the dead process's claim (its lease: the
//     attempt's timeout + 30 s); now the claim of a process whose
//     liveness lock is gone is taken back at once.
//  2. Mid-batch: the consumer has fetched events from JetStream and is
//     making their deliveries (held there by a lock the test takes on the
//     subscriptions table) when it is killed; more events follow once the
//     service is back. Those fetched events must not be lost: before the
//     fix the restarted consumer's fetch got the later events, and its
//     acknowledgement of them (AckAll) acknowledged the dead process's
//     batch too, whose deliveries were never made.
func TestWebhooksSurviveKilledDocumentService(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := startOwnStack(t, []string{"folder", "schema", "document", "gateway"}, nil,
		map[string][]string{"document": {"DOCREPO_WEBHOOK_RETRY_PERIOD=10m"}})
	owner, ownerName := s.user()
	admin, _ := s.user(auth.ScopeWebhooks)
	rcv := newFaultReceiver(t)
	created, err := admin.CreateWebhook(ctx, rest.WebhookSpec{URL: rcv.srv.URL, Owner: ownerName, EventTypes: []string{"document.*"}})
	if err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	rcv.secret = created.Secret
	rcv.hold = true
	rcv.mu.Unlock()
	f, err := owner.CreateFolder(ctx, uniq("hooks"), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64][]string{}
	upload := func(n int) []int64 {
		t.Helper()
		var ids []int64
		for i := range n {
			up, err := owner.Upload(ctx, rest.Upload{FolderID: f.FolderID, Filename: fmt.Sprintf("h%d.txt", i),
				File: strings.NewReader(uniq("hooked")), ContentType: "text/plain"})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, up.DocID)
			want[up.DocID] = append(want[up.DocID], "document.created")
		}
		return ids
	}
	// served waits until the gateway reaches the restarted document
	// service (its connection comes back within a second or so): the
	// writes below are not retried, since a retried update could make a
	// second event.
	var docs []int64
	served := func() {
		t.Helper()
		eventually(t, time.Minute, func() error { _, err := owner.GetDocument(ctx, docs[0]); return err })
	}
	update := func(ids []int64, round string) {
		t.Helper()
		for _, id := range ids {
			if _, err := owner.UpdateDocument(ctx, id, rest.DocumentPatch{DocStatus: rest.Ptr(round)}); err != nil {
				t.Fatal(err)
			}
			want[id] = append(want[id], "document.updated")
		}
	}

	// 1. Killed while a delivery waits for the receiver's answer.
	docs = upload(4)
	var held hookEvent
	select {
	case held = <-rcv.held:
	case <-time.After(60 * time.Second):
		t.Fatal("no delivery reached the receiver within 60 s")
	}
	// Its claim's lease: when it would be due again without the fix.
	var leaseEnd time.Time
	if err := s.pool.QueryRow(ctx, `SELECT next_attempt_at FROM document.webhook_deliveries WHERE id = $1`,
		strings.TrimPrefix(held.ID, "msg_")).Scan(&leaseEnd); err != nil {
		t.Fatal(err)
	}
	s.kill("document", nil)
	t.Logf("killed the document service while it sent %+v", held)
	served()
	update(docs, "after-kill-1")
	for !rcv.got(held.ID) {
		if time.Now().After(leaseEnd) {
			t.Fatalf("delivery %s, in flight at the kill, not sent again before its lease ended (%s): the restarted service waited out the dead one's claim",
				held.ID, leaseEnd.Format(time.RFC3339))
		}
		time.Sleep(20 * time.Millisecond)
	}

	// 2. Killed while the consumer holds a fetched batch.
	lockTx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lockTx.Rollback(ctx)
	if _, err := lockTx.Exec(ctx, `LOCK TABLE document.webhook_subscriptions IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	update(docs, "in-batch")
	js := s.nats.JetStream(t)
	eventually(t, 60*time.Second, func() error {
		cons, err := js.Consumer(ctx, events.StreamName, "webhooks")
		if err != nil {
			return err
		}
		info, err := cons.Info(ctx)
		if err != nil {
			return err
		}
		var waiting int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
			AND query LIKE '%FROM webhook_subscriptions%' AND query NOT LIKE '%pg_stat_activity%'`).Scan(&waiting); err != nil {
			return err
		}
		if info.NumAckPending == 0 || waiting == 0 {
			return fmt.Errorf("the consumer holds %d events unacknowledged, %d queries wait for the subscriptions", info.NumAckPending, waiting)
		}
		return nil
	})
	s.kill("document", func() { _ = lockTx.Rollback(ctx) })
	served()
	update(docs, "after-kill-2")
	docs = append(docs, upload(2)...)
	update(docs, "last")

	eventually(t, 3*time.Minute, func() error { return rcv.check(want) })
	// The delivery log agrees: each delivered (recorded a moment after
	// the receiver's answer).
	eventually(t, 30*time.Second, func() error {
		var pending int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM document.webhook_deliveries WHERE state <> 'delivered'`).Scan(&pending); err != nil {
			return err
		}
		if pending != 0 {
			return fmt.Errorf("%d deliveries not delivered in the log", pending)
		}
		return nil
	})
}
