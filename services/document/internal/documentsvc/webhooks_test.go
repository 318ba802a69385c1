package documentsvc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/events"
	eventv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/event/v1"
	webhookv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/webhook/v1"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/outbox"
	"github.com/docrepo/docrepo/pkg/testenv/natstest"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
	"github.com/docrepo/docrepo/pkg/webhook"
)

// receiver is a webhook endpoint that checks every request's signature
// with webhook.Verify (the Standard Webhooks rules written out apart from
// the signing) and records what it accepted.
type receiver struct {
	t      *testing.T
	secret string
	mu     sync.Mutex
	// fail answers 500 to the first fail[doc] requests about doc.
	fail     map[int64]int
	got      []received
	attempts map[int64]int
	ids      map[string]bool
	srv      *httptest.Server
}

type received struct {
	Type string
	Doc  int64
	Rev  int64
}

func newReceiver(t *testing.T, secret string) *receiver {
	r := &receiver{t: t, secret: secret, fail: map[int64]int{}, attempts: map[int64]int{}, ids: map[string]bool{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	id := req.Header.Get("webhook-id")
	if err := webhook.Verify(r.secret, req.Header, body, time.Now(), webhook.DefaultTolerance); err != nil {
		r.t.Errorf("a request with a bad signature (%v): %v", err, req.Header)
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
		r.t.Errorf("body %s: %v", body, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts[ev.Data.DocID]++
	if r.fail[ev.Data.DocID] > 0 {
		r.fail[ev.Data.DocID]--
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	if r.ids[id] {
		r.t.Errorf("message %s delivered twice", id)
	}
	r.ids[id] = true
	r.got = append(r.got, received{Type: ev.Type, Doc: ev.Data.DocID, Rev: ev.Data.Rev})
	w.WriteHeader(http.StatusOK)
}

func (r *receiver) received() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

type webhookEnv struct {
	pool  *pgxpool.Pool
	js    jetstream.JetStream
	hooks *Webhooks
	ids   *identity.Store
}

func newWebhookEnv(t *testing.T, cfg WebhookConfig) *webhookEnv {
	t.Helper()
	pool := pgtest.NewPool(t, Schema, Migrations()...)
	ns := natstest.Start(t)
	js := ns.JetStream(t)
	ids := identity.NewStore(pool)
	if cfg.Keyring == nil {
		k, err := webhook.ParseKeyring(webhook.NewKey(), "")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Keyring = k
	}
	hooks := NewWebhooks(pool, ids, cfg, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = hooks.ConsumeWebhookEvents(ctx, js) })
	wg.Go(func() { _ = hooks.RunDeliveries(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	// Subscriptions see events published after the consumer exists.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := js.Consumer(ctx, events.StreamName, WebhookConsumer); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the webhook consumer did not appear")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &webhookEnv{pool: pool, js: js, hooks: hooks, ids: ids}
}

// doc inserts a document in groups.
func (e *webhookEnv) doc(t *testing.T, groups ...int64) int64 {
	t.Helper()
	var id int64
	ctx := context.Background()
	if err := e.pool.QueryRow(ctx, `INSERT INTO documents (description, entry_person_id, entry_person) VALUES ('d', 1, 'u') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO document_groups (doc_id, group_id) SELECT $1, unnest($2::bigint[])`, id, groups); err != nil {
		t.Fatal(err)
	}
	return id
}

var eventSeq int64

// publish publishes a document event as the relay would.
func (e *webhookEnv) publish(t *testing.T, doc, rev int64, kind string) {
	t.Helper()
	eventSeq++
	ev := &eventv1.DocumentEvent{EventId: eventSeq, DocId: doc, Rev: rev, Kind: kind, OccurredAt: timestamppb.Now()}
	m, err := events.Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.js.PublishMsg(context.Background(), m, jetstream.WithMsgID(outbox.MsgID(Schema, eventSeq))); err != nil {
		t.Fatal(err)
	}
}

// owner creates a user in the named groups and returns its name and the
// groups' ids.
func (e *webhookEnv) owner(t *testing.T, name string, groups ...string) []int64 {
	t.Helper()
	u, err := e.ids.CreateUser(context.Background(), name, groups)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, g := range u.Groups {
		ids = append(ids, g.ID)
	}
	return ids
}

func (e *webhookEnv) subscribe(t *testing.T, url, owner string, types ...string) *webhookv1.CreateWebhookResponse {
	t.Helper()
	resp, err := e.hooks.CreateWebhook(context.Background(), &webhookv1.CreateWebhookRequest{Url: proto.String(url), Owner: proto.String(owner), EventTypes: types})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func waitUntil(t *testing.T, d time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Events become signed deliveries in each document's order, a receiver
// answering 500 three times gets the event again after back-off (and the
// document's later events wait for it), events of a document the owner
// cannot see are never sent, and event types not subscribed are not sent.
func TestWebhookDeliveriesKeepOrderRetryAndFilterByOwner(t *testing.T) {
	e := newWebhookEnv(t, WebhookConfig{AllowPrivate: true, Poll: 20 * time.Millisecond,
		Schedule: webhook.Schedule{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond, Period: time.Minute}})
	groups := e.owner(t, "hookowner", "hg1")
	other := e.owner(t, "stranger", "hg2")
	a, b, hidden := e.doc(t, groups[0]), e.doc(t, groups[0], other[0]), e.doc(t, other[0])
	r := newReceiver(t, "")
	sub := e.subscribe(t, r.srv.URL, "hookowner", "document.created", "document.updated", "document.locked")
	r.secret = sub.GetSecret()
	r.mu.Lock()
	r.fail[a] = 3
	r.mu.Unlock()

	e.publish(t, a, 1, "created")
	e.publish(t, b, 1, "created")
	e.publish(t, hidden, 1, "created")
	for rev := int64(2); rev <= 6; rev++ {
		e.publish(t, a, rev, "updated")
		e.publish(t, hidden, rev, "updated")
		e.publish(t, b, rev, "updated")
	}
	e.publish(t, a, 7, "unlocked") // not subscribed
	e.publish(t, b, 7, "locked")

	waitUntil(t, 20*time.Second, func() error {
		if n := len(r.received()); n != 13 {
			return fmt.Errorf("received %d events, want 13: %+v", n, r.received())
		}
		return nil
	})
	time.Sleep(200 * time.Millisecond) // nothing more may come
	got := r.received()
	if len(got) != 13 {
		t.Fatalf("received %d events after the wait: %+v", len(got), got)
	}
	last := map[int64]int64{}
	for _, ev := range got {
		if ev.Doc == hidden {
			t.Errorf("the owner received an event of a document it cannot see: %+v", ev)
		}
		if ev.Rev != last[ev.Doc]+1 {
			t.Errorf("document %d: rev %d after %d (out of order): %+v", ev.Doc, ev.Rev, last[ev.Doc], got)
		}
		last[ev.Doc] = ev.Rev
	}
	if last[a] != 6 || last[b] != 7 {
		t.Errorf("last revs %v", last)
	}
	r.mu.Lock()
	attemptsA := r.attempts[a]
	r.mu.Unlock()
	if attemptsA != 9 { // 6 events, the first one 4 times
		t.Errorf("%d attempts about document a, want 9", attemptsA)
	}

	// The delivery log says the same.
	log, err := e.hooks.ListDeliveries(context.Background(), &webhookv1.ListDeliveriesRequest{WebhookId: sub.GetWebhook().GetWebhookId(), Limit: proto.Int32(100)})
	if err != nil {
		t.Fatal(err)
	}
	if len(log.GetDeliveries()) != 13 {
		t.Fatalf("%d deliveries in the log", len(log.GetDeliveries()))
	}
	for _, d := range log.GetDeliveries() {
		wantAttempts := int32(1)
		if d.GetDocId() == a && d.GetEventType() == "document.created" {
			wantAttempts = 4
		}
		if d.GetState() != "delivered" || d.GetAttempts() != wantAttempts || d.GetLastStatus() != 200 || d.GetDeliveredAt() == nil {
			t.Errorf("delivery %+v", d)
		}
	}
	list, err := e.hooks.ListWebhooks(context.Background(), &webhookv1.ListWebhooksRequest{})
	if err != nil || len(list.GetWebhooks()) != 1 || list.GetWebhooks()[0].GetOwner() != "hookowner" {
		t.Fatalf("list = %+v, %v", list, err)
	}
	raw, _ := json.Marshal(list)
	if strings.Contains(string(raw), sub.GetSecret()) {
		t.Error("the listing shows the secret")
	}
}

// A delivery that keeps failing is dead after the retry period, and its
// death pauses the subscription: the document's next event (and any
// other) is recorded but not sent, so the receiver cannot get it while
// missing the dead one. Resumed once the receiver works, the dead
// delivery goes first, with its message id, then the later one; a
// delivered one may be redelivered by hand.
func TestWebhookDeadLetterPausesAndResumeKeepsOrder(t *testing.T) {
	e := newWebhookEnv(t, WebhookConfig{AllowPrivate: true, Poll: 20 * time.Millisecond,
		Schedule: webhook.Schedule{Initial: 20 * time.Millisecond, Max: 50 * time.Millisecond, Period: 300 * time.Millisecond}})
	groups := e.owner(t, "deadowner", "dg")
	doc := e.doc(t, groups[0])
	r := newReceiver(t, "")
	sub := e.subscribe(t, r.srv.URL, "deadowner", "document.*")
	r.secret = sub.GetSecret()
	r.mu.Lock()
	r.fail[doc] = 1 << 30
	r.mu.Unlock()
	e.publish(t, doc, 1, "created")
	ctx := context.Background()
	hook := sub.GetWebhook().GetWebhookId()
	var dead *webhookv1.Delivery
	waitUntil(t, 20*time.Second, func() error {
		log, err := e.hooks.ListDeliveries(ctx, &webhookv1.ListDeliveriesRequest{WebhookId: hook, State: "dead"})
		if err != nil {
			return err
		}
		if len(log.GetDeliveries()) != 1 {
			return errors.New("no dead delivery yet")
		}
		dead = log.GetDeliveries()[0]
		return nil
	})
	if dead.GetAttempts() < 3 || dead.GetLastStatus() != 500 || !strings.Contains(dead.GetLastError(), "HTTP 500") {
		t.Errorf("dead delivery %+v", dead)
	}
	state := func() *webhookv1.Webhook {
		t.Helper()
		list, err := e.hooks.ListWebhooks(ctx, &webhookv1.ListWebhooksRequest{})
		if err != nil || len(list.GetWebhooks()) != 1 {
			t.Fatalf("webhooks = %+v, %v", list, err)
		}
		return list.GetWebhooks()[0]
	}
	if h := state(); h.GetState() != "paused" || h.GetPausedAt() == nil || !strings.Contains(h.GetPausedReason(), "HTTP 500") || h.GetDead() != 1 {
		t.Fatalf("after the death: %+v", h)
	}
	r.mu.Lock()
	attemptsAtPause := r.attempts[doc]
	r.fail[doc] = 0 // the receiver works again; nothing is sent while paused
	r.mu.Unlock()
	e.publish(t, doc, 2, "updated")
	waitUntil(t, 20*time.Second, func() error {
		if h := state(); h.GetPending() != 1 {
			return fmt.Errorf("the later event is not recorded yet: %+v", h)
		}
		return nil
	})
	if _, err := e.hooks.ResumeWebhook(ctx, &webhookv1.ResumeWebhookRequest{WebhookId: hook + 1000}); err == nil {
		t.Error("resumed an unknown webhook")
	}
	r.mu.Lock()
	if r.attempts[doc] != attemptsAtPause || len(r.got) != 0 {
		t.Errorf("sent while paused: %d attempts (then %d), received %v", r.attempts[doc], attemptsAtPause, r.got)
	}
	r.mu.Unlock()
	resumed, err := e.hooks.ResumeWebhook(ctx, &webhookv1.ResumeWebhookRequest{WebhookId: hook})
	if err != nil || resumed.GetRequeued() != 1 || resumed.GetWebhook().GetState() != "active" {
		t.Fatalf("resume = %+v, %v", resumed, err)
	}
	waitUntil(t, 20*time.Second, func() error {
		if len(r.received()) != 2 {
			return fmt.Errorf("received %v after the resume", r.received())
		}
		return nil
	})
	if got := r.received(); got[0].Rev != 1 || got[1].Rev != 2 {
		t.Fatalf("received %v, want rev 1 then 2", got)
	}
	r.mu.Lock()
	ok := r.ids[dead.GetMessageId()]
	r.mu.Unlock()
	if !ok {
		t.Errorf("the requeued delivery did not carry message id %s", dead.GetMessageId())
	}
	if _, err := e.hooks.Redeliver(ctx, &webhookv1.RedeliverRequest{WebhookId: hook, DeliveryId: dead.GetDeliveryId() + 1000}); err == nil {
		t.Error("redelivered an unknown delivery")
	}
	if _, err := e.hooks.Redeliver(ctx, &webhookv1.RedeliverRequest{WebhookId: hook, DeliveryId: dead.GetDeliveryId()}); err != nil {
		// A delivered one may be sent again too.
		t.Errorf("redelivering a delivered one: %v", err)
	}
}

// Without the allow setting a subscription to a private address is
// refused at creation, and a name that resolves to one (here localhost,
// as a rebinding DNS name would) is refused when dialed: the attempt
// fails and the receiver is never reached.
func TestWebhookRefusesPrivateAddresses(t *testing.T) {
	e := newWebhookEnv(t, WebhookConfig{Poll: 20 * time.Millisecond,
		Schedule: webhook.Schedule{Initial: time.Hour, Max: time.Hour, Period: 24 * time.Hour}})
	groups := e.owner(t, "privowner", "pg")
	r := newReceiver(t, webhook.NewSecret())
	ctx := context.Background()
	_, err := e.hooks.CreateWebhook(ctx, &webhookv1.CreateWebhookRequest{Url: proto.String(r.srv.URL), Owner: proto.String("privowner"), EventTypes: []string{"document.*"}})
	if err == nil || !strings.Contains(err.Error(), "not public") {
		t.Fatalf("subscribing %s: %v", r.srv.URL, err)
	}
	// A name that passed the check when subscribed and resolves to a
	// private address now (as a rebinding DNS name would): localhost.
	port := r.srv.URL[strings.LastIndex(r.srv.URL, ":")+1:]
	var hook int64
	if err := e.pool.QueryRow(ctx, `INSERT INTO webhook_subscriptions (url, event_types, owner_id, owner_name, secret)
		SELECT $1, '{document.*}', id, username, $2 FROM identity.users WHERE username = 'privowner' RETURNING id`,
		"http://localhost:"+port+"/", r.secret).Scan(&hook); err != nil {
		t.Fatal(err)
	}
	if _, err := e.hooks.SealSecrets(ctx); err != nil { // as at a start
		t.Fatal(err)
	}
	doc := e.doc(t, groups[0])
	e.publish(t, doc, 1, "created")
	var d *webhookv1.Delivery
	waitUntil(t, 20*time.Second, func() error {
		log, err := e.hooks.ListDeliveries(ctx, &webhookv1.ListDeliveriesRequest{WebhookId: hook})
		if err != nil {
			return err
		}
		if len(log.GetDeliveries()) != 1 || log.GetDeliveries()[0].GetAttempts() != 1 {
			return fmt.Errorf("deliveries %+v", log.GetDeliveries())
		}
		d = log.GetDeliveries()[0]
		return nil
	})
	if d.GetState() != "pending" || !strings.Contains(d.GetLastError(), "not a public one") {
		t.Errorf("delivery %+v", d)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.attempts) != 0 {
		t.Errorf("the private receiver was reached: %v", r.attempts)
	}
}

// The groups that decide who hears of a document: its document_groups
// rows, or, once it is purged (rows gone), those its creation's audit
// entry recorded, so document.purged reaches exactly who could see it.
func TestGroupsOfDocumentsOutliveThePurge(t *testing.T) {
	pool := pgtest.NewPool(t, Schema, Migrations()...)
	ctx := context.Background()
	var live int64
	if err := pool.QueryRow(ctx, `INSERT INTO documents (description, entry_person_id, entry_person) VALUES ('d', 1, 'u') RETURNING id`).Scan(&live); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO document_groups (doc_id, group_id) VALUES ($1, 5), ($1, 6)`, live); err != nil {
		t.Fatal(err)
	}
	const purged, never = 900001, 900002
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return audit.Append(ctx, tx, audit.Entry{Action: "document.created", ObjectID: purged, Details: map[string]any{"group_ids": []int64{7}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := groupsOfDocuments(ctx, pool, []int64{live, purged, never})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got[live])
	if !slices.Equal(got[live], []int64{5, 6}) || !slices.Equal(got[purged], []int64{7}) || len(got[never]) != 0 {
		t.Fatalf("groups = %v", got)
	}
}

// TestWebhookThroughput measures deliveries per second and the lag from an
// event's time to its arrival at a receiver, with events published at a
// steady rate (DOCREPO_WEBHOOK_BENCH=1; DOCREPO_WEBHOOK_BENCH_RATE events
// a second, default 200, for DOCREPO_WEBHOOK_BENCH_SECONDS, default 10)
// to three subscriptions, one of which sees every document. It is a
// measurement, so it runs only when asked; it fails only if deliveries
// are lost or reordered.
func TestWebhookThroughput(t *testing.T) {
	if os.Getenv("DOCREPO_WEBHOOK_BENCH") == "" {
		t.Skip("set DOCREPO_WEBHOOK_BENCH=1 to measure webhook throughput and lag")
	}
	rate, secs := envInt("DOCREPO_WEBHOOK_BENCH_RATE", 200), envInt("DOCREPO_WEBHOOK_BENCH_SECONDS", 10)
	e := newWebhookEnv(t, WebhookConfig{AllowPrivate: true})
	groups := e.owner(t, "benchowner", "bg1", "bg2")
	e.owner(t, "benchhalf", "bg1")
	docs := make([]int64, 50)
	for i := range docs {
		docs[i] = e.doc(t, groups[i%2])
	}
	type arrival struct {
		doc, rev int64
		lag      time.Duration
	}
	var mu sync.Mutex
	var arrivals []arrival
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			Timestamp time.Time `json:"timestamp"`
			Data      struct {
				DocID int64 `json:"doc_id"`
				Rev   int64 `json:"rev"`
			} `json:"data"`
		}
		_ = json.NewDecoder(r.Body).Decode(&ev)
		mu.Lock()
		arrivals = append(arrivals, arrival{ev.Data.DocID, ev.Data.Rev, time.Since(ev.Timestamp)})
		mu.Unlock()
	}))
	defer srv.Close()
	e.subscribe(t, srv.URL+"/all", "benchowner", "document.*")
	e.subscribe(t, srv.URL+"/half", "benchhalf", "document.*")
	e.subscribe(t, srv.URL+"/updates", "benchowner", "document.updated")
	n := rate * secs
	revs := map[int64]int64{}
	start := time.Now()
	tick := time.NewTicker(time.Second / time.Duration(rate))
	for i := range n {
		<-tick.C
		d := docs[i%len(docs)]
		revs[d]++
		kind := "updated"
		if revs[d] == 1 {
			kind = "created"
		}
		e.publish(t, d, revs[d], kind)
	}
	tick.Stop()
	published := time.Since(start)
	// all: every event; half: the bg1 documents' (half); updates: all but
	// the 50 creations.
	want := n + n/2 + n - len(docs)
	waitUntil(t, 5*time.Minute, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(arrivals) < want {
			return fmt.Errorf("%d of %d deliveries arrived", len(arrivals), want)
		}
		return nil
	})
	total := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	lags := make([]time.Duration, len(arrivals))
	for i, a := range arrivals {
		lags[i] = a.lag
	}
	slices.Sort(lags)
	pct := func(p float64) time.Duration { return lags[int(p*float64(len(lags)-1))] }
	t.Logf("%d events at %d/s in %v; %d deliveries to 3 subscriptions in %v (%.0f deliveries/s); lag p50 %v p99 %v max %v",
		n, rate, published.Round(time.Millisecond), len(arrivals), total.Round(time.Millisecond),
		float64(len(arrivals))/total.Seconds(), pct(0.5).Round(time.Millisecond), pct(0.99).Round(time.Millisecond),
		lags[len(lags)-1].Round(time.Millisecond))
	if len(arrivals) != want {
		t.Errorf("%d deliveries, want %d", len(arrivals), want)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// The delivery log keeps delivered deliveries for the retention, and
// pending and dead ones whatever their age.
func TestWebhookLogPrunesOnlyOldDeliveredOnes(t *testing.T) {
	pool := pgtest.NewPool(t, Schema, Migrations()...)
	ctx := context.Background()
	w := NewWebhooks(pool, identity.NewStore(pool), WebhookConfig{LogRetention: 24 * time.Hour}, nil)
	var sub int64
	if err := pool.QueryRow(ctx, `INSERT INTO webhook_subscriptions (url, event_types, owner_id, owner_name, secret)
		VALUES ('https://example.com/', '{document.*}', 1, 'u', 'whsec_x') RETURNING id`).Scan(&sub); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rows := []struct {
		event     string
		state     string
		delivered *time.Time
	}{
		{event: "old-delivered", state: "delivered", delivered: new(now.Add(-48 * time.Hour))},
		{event: "new-delivered", state: "delivered", delivered: new(now.Add(-time.Hour))},
		{event: "old-dead", state: "dead"},
		{event: "old-pending", state: "pending"},
	}
	for _, r := range rows {
		if _, err := pool.Exec(ctx, `INSERT INTO webhook_deliveries (subscription_id, event_id, event_type, doc_id, payload, state,
			delivered_at, created_at) VALUES ($1, $2, 'document.created', 1, '{}', $3, $4, $5)`,
			sub, r.event, r.state, r.delivered, now.Add(-72*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := w.pruneLog(ctx)
	if err != nil || n != 1 {
		t.Fatalf("pruned %d, %v; want 1", n, err)
	}
	var left []string
	r, err := pool.Query(ctx, `SELECT event_id FROM webhook_deliveries ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var s string
		if err := r.Scan(&s); err != nil {
			t.Fatal(err)
		}
		left = append(left, s)
	}
	if strings.Join(left, " ") != "new-delivered old-dead old-pending" {
		t.Errorf("left %v", left)
	}
}

// Secrets are sealed at rest: a new subscription's row holds no clear
// secret; at start a row still in clear (made before migration 0009) and
// rows sealed under a rotated-out key are sealed under the current key;
// without a key, a store with subscriptions refuses to start and no
// subscription can be made; a key that is gone is an error, not a
// silent loss.
func TestWebhookSecretsAreSealedAtRest(t *testing.T) {
	ctx := context.Background()
	k1, k2 := webhook.NewKey(), webhook.NewKey()
	ring1, err := webhook.ParseKeyring(k1, "")
	if err != nil {
		t.Fatal(err)
	}
	e := newWebhookEnv(t, WebhookConfig{AllowPrivate: true, Keyring: ring1})
	e.owner(t, "sealer", "g-seal")
	created := e.subscribe(t, "http://127.0.0.1:1/hook", "sealer", "document.*")
	legacy := webhook.NewSecret()
	var legacyID int64
	if err := e.pool.QueryRow(ctx, `INSERT INTO webhook_subscriptions (url, event_types, owner_id, owner_name, secret)
		VALUES ('http://127.0.0.1:1/old', '{document.*}', 1, 'sealer', $1) RETURNING id`, legacy).Scan(&legacyID); err != nil {
		t.Fatal(err)
	}
	want := map[int64]string{created.GetWebhook().GetWebhookId(): created.GetSecret(), legacyID: legacy}
	// rows checks that no row holds a secret in clear and that each opens
	// under ring to what was given.
	rows := func(ring *webhook.Keyring, wantKey string) {
		t.Helper()
		for id, secret := range want {
			var clear *string
			var sealed []byte
			var keyID string
			if err := e.pool.QueryRow(ctx, `SELECT secret, secret_sealed, secret_key_id FROM webhook_subscriptions WHERE id = $1`, id).
				Scan(&clear, &sealed, &keyID); err != nil {
				t.Fatal(err)
			}
			if clear != nil || bytes.Contains(sealed, []byte(strings.TrimPrefix(secret, webhook.SecretPrefix))) {
				t.Fatalf("subscription %d holds its secret in clear", id)
			}
			if keyID != wantKey {
				t.Fatalf("subscription %d sealed under %s, want %s", id, keyID, wantKey)
			}
			if got, err := ring.Open(sealed, keyID, id); err != nil || got != secret {
				t.Fatalf("subscription %d opens to %q, %v", id, got, err)
			}
		}
	}
	start := func(ring *webhook.Keyring) (int, error) {
		return NewWebhooks(e.pool, e.ids, WebhookConfig{Keyring: ring}, nil).SealSecrets(ctx)
	}
	if n, err := start(ring1); err != nil || n != 1 {
		t.Fatalf("sealing the legacy row: %d, %v; want 1", n, err)
	}
	rows(ring1, ring1.CurrentID())

	rotated, err := webhook.ParseKeyring(k2, k1)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := start(rotated); err != nil || n != 2 {
		t.Fatalf("rotation: %d, %v; want both rows sealed again", n, err)
	}
	ring2, _ := webhook.ParseKeyring(k2, "")
	rows(ring2, ring2.CurrentID())
	if n, err := start(ring2); err != nil || n != 0 {
		t.Fatalf("a start after the rotation: %d, %v; want nothing to do", n, err)
	}

	if _, err := start(nil); err == nil || !strings.Contains(err.Error(), "DOCREPO_WEBHOOK_KEY") {
		t.Fatalf("a start without a key: %v", err)
	}
	other, _ := webhook.ParseKeyring(webhook.NewKey(), "")
	if _, err := start(other); !errors.Is(err, webhook.ErrUnknownKey) {
		t.Fatalf("a start with a key that sealed nothing: %v", err)
	}
	_, err = NewWebhooks(e.pool, e.ids, WebhookConfig{}, nil).CreateWebhook(ctx, &webhookv1.CreateWebhookRequest{
		Url: proto.String("http://example.com/h"), Owner: proto.String("sealer"), EventTypes: []string{"document.*"}})
	if err == nil || !strings.Contains(err.Error(), "DOCREPO_WEBHOOK_KEY") {
		t.Fatalf("creating a webhook without a key: %v", err)
	}
}

// publishFolder publishes a folder event as the folder service's relay
// would.
func (e *webhookEnv) publishFolder(t *testing.T, folder int64, kind string, groups []int64, deleted ...int64) {
	t.Helper()
	eventSeq++
	ev := &eventv1.FolderEvent{EventId: eventSeq, FolderId: folder, Kind: kind, OccurredAt: timestamppb.Now(), GroupIds: groups, FolderIds: deleted}
	m, err := events.Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.js.PublishMsg(context.Background(), m, jetstream.WithMsgID(outbox.MsgID("folder", eventSeq))); err != nil {
		t.Fatal(err)
	}
}

// Folder events reach the subscriptions that name them (folder.* or one
// type), in order, only when the owner shares a group with the folder
// (the groups the event carries); a document-only subscription gets none.
func TestWebhookFolderEvents(t *testing.T) {
	e := newWebhookEnv(t, WebhookConfig{AllowPrivate: true, Poll: 20 * time.Millisecond})
	ctx := context.Background()
	seen := e.owner(t, "folderowner", "fg")
	e.owner(t, "folderstranger", "fx")
	r := newReceiver(t, "")
	sub := e.subscribe(t, r.srv.URL, "folderowner", "folder.*")
	r.secret = sub.GetSecret()
	only := newReceiver(t, "")
	onlySub := e.subscribe(t, only.srv.URL, "folderowner", "folder.deleted")
	only.secret = onlySub.GetSecret()
	stranger := e.subscribe(t, r.srv.URL, "folderstranger", "folder.*")
	docs := e.subscribe(t, r.srv.URL, "folderowner", "document.*")

	e.publishFolder(t, 41, "created", seen)
	e.publishFolder(t, 41, "moved", seen)
	e.publishFolder(t, 41, "deleted", seen, 41, 42)
	waitUntil(t, 20*time.Second, func() error {
		if len(r.received()) != 3 || len(only.received()) != 1 {
			return fmt.Errorf("received %v and %v", r.received(), only.received())
		}
		return nil
	})
	var types []string
	for _, g := range r.received() {
		types = append(types, g.Type)
	}
	if want := []string{"folder.created", "folder.moved", "folder.deleted"}; !slices.Equal(types, want) {
		t.Fatalf("received %v, want %v", types, want)
	}
	if got := only.received()[0].Type; got != "folder.deleted" {
		t.Fatalf("the folder.deleted subscription received %s", got)
	}
	log, err := e.hooks.ListDeliveries(ctx, &webhookv1.ListDeliveriesRequest{WebhookId: sub.GetWebhook().GetWebhookId()})
	if err != nil || len(log.GetDeliveries()) != 3 || log.GetDeliveries()[0].GetFolderId() != 41 || log.GetDeliveries()[0].GetDocId() != 0 {
		t.Fatalf("delivery log %+v, %v", log, err)
	}
	// The deleted folder only: its subfolder 42 may be in groups the
	// owner does not share.
	var payload string
	if err := e.pool.QueryRow(ctx, `SELECT payload::text FROM webhook_deliveries WHERE subscription_id = $1 AND event_type = 'folder.deleted'`,
		sub.GetWebhook().GetWebhookId()).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	var deleted struct {
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal([]byte(payload), &deleted); err != nil || deleted.Data["folder_id"] != float64(41) || deleted.Data["folder_ids"] != nil {
		t.Fatalf("folder.deleted payload %s, %v", payload, err)
	}
	for _, h := range []*webhookv1.CreateWebhookResponse{stranger, docs} {
		log, err := e.hooks.ListDeliveries(ctx, &webhookv1.ListDeliveriesRequest{WebhookId: h.GetWebhook().GetWebhookId()})
		if err != nil || len(log.GetDeliveries()) != 0 {
			t.Errorf("webhook %d (%v) got deliveries %+v, %v", h.GetWebhook().GetWebhookId(), h.GetWebhook().GetEventTypes(), log, err)
		}
	}
	for _, bad := range []string{"folder.renamed", "folders.*", "*"} {
		_, err := e.hooks.CreateWebhook(ctx, &webhookv1.CreateWebhookRequest{Url: proto.String(r.srv.URL), Owner: proto.String("folderowner"), EventTypes: []string{bad}})
		if err == nil {
			t.Errorf("event type %q accepted", bad)
		}
	}
}

// A deployment upgraded from document events only: its durable webhooks
// consumer (FilterSubject docrepo.document.*) is updated in place to
// both subjects, and folder events then make deliveries.
func TestWebhookConsumerUpgradesToFolderEvents(t *testing.T) {
	pool := pgtest.NewPool(t, Schema, Migrations()...)
	ns := natstest.Start(t)
	js := ns.JetStream(t)
	ctx := context.Background()
	stream, err := outbox.EnsureStream(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: WebhookConsumer, FilterSubject: events.SubjectDocuments,
		DeliverPolicy: jetstream.DeliverNewPolicy, AckPolicy: jetstream.AckAllPolicy, AckWait: 30 * time.Second, MaxAckPending: webhookBatch}); err != nil {
		t.Fatal(err)
	}
	k, _ := webhook.ParseKeyring(webhook.NewKey(), "")
	e := &webhookEnv{pool: pool, js: js, ids: identity.NewStore(pool)}
	e.hooks = NewWebhooks(pool, e.ids, WebhookConfig{AllowPrivate: true, Poll: 20 * time.Millisecond, Keyring: k}, nil)
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = e.hooks.ConsumeWebhookEvents(cctx, js) })
	wg.Go(func() { _ = e.hooks.RunDeliveries(cctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	waitUntil(t, 20*time.Second, func() error {
		c, err := js.Consumer(ctx, events.StreamName, WebhookConsumer)
		if err != nil {
			return err
		}
		if info := c.CachedInfo(); !slices.Equal(info.Config.FilterSubjects, []string{events.SubjectDocuments, events.SubjectFolders}) {
			return fmt.Errorf("consumer filters %q %v", info.Config.FilterSubject, info.Config.FilterSubjects)
		}
		return nil
	})
	groups := e.owner(t, "upgrader", "ug")
	r := newReceiver(t, "")
	r.secret = e.subscribe(t, r.srv.URL, "upgrader", "folder.*").GetSecret()
	e.publishFolder(t, 7, "created", groups)
	waitUntil(t, 20*time.Second, func() error {
		if got := r.received(); len(got) != 1 || got[0].Type != "folder.created" {
			return fmt.Errorf("received %v", got)
		}
		return nil
	})
}

// A receiver whose error answers are not valid text for Postgres (a NUL,
// bytes that are not UTF-8, or multi-byte characters that the 500-byte
// cap would cut in two) still has its failed attempts recorded, so the
// delivery goes on to die and pause its webhook: an attempt whose error
// could not be stored was never counted, and the delivery was tried
// again every lease, forever.
func TestWebhookFailureWithAnyAnswerIsRecorded(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{name: "NUL and invalid UTF-8", body: "bad \x00 bytes \xff\xfe here"},
		{name: "a CJK page cut at the cap", body: strings.Repeat("語", 300)},
	}
	e := newWebhookEnv(t, WebhookConfig{AllowPrivate: true, Poll: 20 * time.Millisecond,
		Schedule: webhook.Schedule{Initial: 20 * time.Millisecond, Max: 50 * time.Millisecond, Period: 300 * time.Millisecond}})
	groups := e.owner(t, "garbled", "gg1")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = io.WriteString(w, tt.body)
			}))
			t.Cleanup(srv.Close)
			hook := e.subscribe(t, srv.URL, "garbled", "document.created").GetWebhook().GetWebhookId()
			e.publish(t, e.doc(t, groups[0]), 1, "created")
			waitUntil(t, 60*time.Second, func() error {
				hooks, err := webhooksWhere(context.Background(), e.pool, hook)
				if err != nil || len(hooks) != 1 || hooks[0].GetState() != "paused" || hooks[0].GetDead() != 1 {
					return fmt.Errorf("webhook %v, %v; want paused with its delivery dead", hooks, err)
				}
				return nil
			})
			ds, err := e.hooks.ListDeliveries(context.Background(), &webhookv1.ListDeliveriesRequest{WebhookId: hook})
			if err != nil || len(ds.GetDeliveries()) != 1 {
				t.Fatalf("deliveries %v, %v", ds, err)
			}
			if msg := ds.GetDeliveries()[0].GetLastError(); !strings.HasPrefix(msg, "HTTP 500: ") || !utf8.ValidString(msg) || len(msg) > 500 {
				t.Errorf("last error %q (%d bytes), want the HTTP 500 as valid text of at most 500 bytes", msg, len(msg))
			}
			if _, err := e.hooks.DeleteWebhook(context.Background(), &webhookv1.DeleteWebhookRequest{WebhookId: hook}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A delivery that was being retried when its webhook paused gets a new
// retry period at the resume, as the requeued dead ones do: the time
// paused is not time it failed. Its retry period used to run on through
// the pause, so after a long one its first failure killed it at once and
// paused the webhook again.
func TestWebhookResumeGivesPendingDeliveriesANewRetryPeriod(t *testing.T) {
	e := newWebhookEnv(t, WebhookConfig{AllowPrivate: true, Poll: 20 * time.Millisecond,
		Schedule: webhook.Schedule{Initial: 20 * time.Millisecond, Max: 50 * time.Millisecond, Period: 5 * time.Second}})
	groups := e.owner(t, "pausedowner", "pg2")
	doc := e.doc(t, groups[0])
	r := newReceiver(t, "")
	sub := e.subscribe(t, r.srv.URL, "pausedowner", "document.*")
	r.secret = sub.GetSecret()
	hook := sub.GetWebhook().GetWebhookId()
	ctx := context.Background()
	// Paused (another delivery died) while this one had been failing for
	// an hour, longer than the retry period.
	if _, err := e.pool.Exec(ctx, `UPDATE webhook_subscriptions SET paused_at = now(), paused_reason = 'test' WHERE id = $1`, hook); err != nil {
		t.Fatal(err)
	}
	e.publish(t, doc, 1, "created")
	waitUntil(t, 20*time.Second, func() error {
		tag, err := e.pool.Exec(ctx, `UPDATE webhook_deliveries SET attempts = 3, retry_since = now() - interval '1 hour'
			WHERE subscription_id = $1 AND state = 'pending'`, hook)
		if err != nil || tag.RowsAffected() != 1 {
			return fmt.Errorf("the event's pending delivery: %v, %v", tag, err)
		}
		return nil
	})
	r.mu.Lock()
	r.fail[doc] = 1 // one more failure after the resume, then it works
	r.mu.Unlock()
	if _, err := e.hooks.ResumeWebhook(ctx, &webhookv1.ResumeWebhookRequest{WebhookId: hook}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, func() error {
		hooks, err := webhooksWhere(ctx, e.pool, hook)
		if err != nil || len(hooks) != 1 {
			return fmt.Errorf("webhook %v, %v", hooks, err)
		}
		if h := hooks[0]; h.GetState() != "active" || h.GetDead() != 0 {
			t.Fatalf("after one failure following the resume: %v; want it active, the delivery retried", h)
		}
		if got := r.received(); len(got) != 1 || got[0].Doc != doc {
			return fmt.Errorf("received %v", got)
		}
		return nil
	})
}

// Two document service replicas consume the webhook events together (one
// durable consumer, one database): JetStream hands the events of their
// waiting fetches out in turn, yet the deliveries are made in stream
// order, so a document's events reach the receiver in order, and none is
// lost (a replica's acknowledgement of its batch covers the events before
// it, which must not be another's still being handled).
func TestWebhookReplicasMakeDeliveriesInStreamOrder(t *testing.T) {
	cfg := WebhookConfig{AllowPrivate: true, Poll: 20 * time.Millisecond,
		Schedule: webhook.Schedule{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond, Period: time.Minute}}
	e := newWebhookEnv(t, cfg)
	// The second replica: its own Webhooks on the same database and
	// stream, consuming and sending.
	other := NewWebhooks(e.pool, e.ids, e.hooks.cfg, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = other.ConsumeWebhookEvents(ctx, e.js) })
	wg.Go(func() { _ = other.RunDeliveries(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	groups := e.owner(t, "replicaowner", "rg1")
	doc := e.doc(t, groups[0])
	r := newReceiver(t, "")
	sub := e.subscribe(t, r.srv.URL, "replicaowner", "document.*")
	r.secret = sub.GetSecret()
	const n = 200
	for rev := int64(1); rev <= n; rev++ {
		e.publish(t, doc, rev, "updated")
		if rev%10 == 0 {
			time.Sleep(5 * time.Millisecond) // several fetches, not one batch
		}
	}
	waitUntil(t, 60*time.Second, func() error {
		if got := len(r.received()); got != n {
			return fmt.Errorf("received %d events, want %d", got, n)
		}
		return nil
	})
	var out []int64
	for _, ev := range r.received() {
		out = append(out, ev.Rev)
	}
	for i, rev := range out {
		if rev != int64(i+1) {
			t.Fatalf("received revs out of stream order at %d: %v", i, out)
		}
	}
}

// A delivery claimed by a sender that died (its instance holds no
// advisory lock: a document process killed mid-attempt) is sent again as
// soon as a live sender sweeps, not after the claim's lease; one claimed
// by a sender that is alive (its lock held) is left to it.
func TestWebhookClaimOfADeadSenderIsTakenBack(t *testing.T) {
	ctx := context.Background()
	e := newWebhookEnv(t, WebhookConfig{AllowPrivate: true, Poll: 20 * time.Millisecond})
	groups := e.owner(t, "claimowner", "cg1")
	dead, alive := e.doc(t, groups[0]), e.doc(t, groups[0])
	r := newReceiver(t, "")
	sub := e.subscribe(t, r.srv.URL, "claimowner", "document.*")
	r.secret = sub.GetSecret()
	// Another sender, alive: it holds its lock on a session of its own.
	lockConn, err := e.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lockConn.Release()
	const liveInstance = 777
	if _, err := lockConn.Exec(ctx, `SELECT pg_advisory_lock($1::int4, $2::int4)`, int32(webhookSenderLockClass), liveInstance); err != nil {
		t.Fatal(err)
	}
	defer lockConn.Exec(ctx, `SELECT pg_advisory_unlock_all()`)
	for _, d := range []struct {
		doc, claimedBy int64
	}{{doc: dead, claimedBy: 12345}, {doc: alive, claimedBy: liveInstance}} {
		payload := fmt.Sprintf(`{"type":"document.created","timestamp":"2026-11-26T00:00:00Z","data":{"doc_id":%d,"rev":1}}`, d.doc)
		if _, err := e.pool.Exec(ctx, `INSERT INTO webhook_deliveries (subscription_id, event_id, event_type, doc_id, payload,
			next_attempt_at, retry_since, claimed_by) VALUES ($1, $2, 'document.created', $3, $4, now() + interval '1 hour', now(), $5)`,
			sub.GetWebhook().GetWebhookId(), fmt.Sprintf("claimed-%d", d.doc), d.doc, payload, d.claimedBy); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, 30*time.Second, func() error {
		if got := r.received(); len(got) != 1 || got[0].Doc != dead {
			return fmt.Errorf("received %+v, want the dead sender's delivery of document %d alone", got, dead)
		}
		return nil
	})
	var state string
	var claimedBy *int64
	var due bool
	if err := e.pool.QueryRow(ctx, `SELECT state, claimed_by, next_attempt_at > now() FROM webhook_deliveries WHERE doc_id = $1`, alive).
		Scan(&state, &claimedBy, &due); err != nil {
		t.Fatal(err)
	}
	if state != "pending" || claimedBy == nil || *claimedBy != liveInstance || !due {
		t.Errorf("the live sender's claim: state %s, claimed_by %v, still leased %v; want it untouched", state, claimedBy, due)
	}
}
