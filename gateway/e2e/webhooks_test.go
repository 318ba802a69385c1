package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/auth"
	rest "github.com/docrepo/docrepo/pkg/client"
	"github.com/docrepo/docrepo/pkg/webhook"
)

// hookReceiver is a webhook endpoint for the suite: it verifies each
// request's Standard Webhooks signature (webhook.Verify), answers 500 to the first
// failFirst requests about the first document it hears of, and records
// the accepted events.
type hookReceiver struct {
	t         *testing.T
	mu        sync.Mutex
	secret    string
	failFirst int
	requests  int
	failDoc   int64
	events    []hookEvent
	srv       *httptest.Server
}

type hookEvent struct {
	ID     string
	Type   string
	Doc    int64
	Rev    int64
	Folder int64
}

func newHookReceiver(t *testing.T, failFirst int) *hookReceiver {
	h := &hookReceiver{t: t, failFirst: failFirst}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		defer h.mu.Unlock()
		id := r.Header.Get("webhook-id")
		if err := webhook.Verify(h.secret, r.Header, body, time.Now(), webhook.DefaultTolerance); err != nil {
			h.t.Errorf("a request with a bad signature or timestamp (%v): %v %s", err, r.Header, body)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var ev struct {
			Type string `json:"type"`
			Data struct {
				DocID    int64 `json:"doc_id"`
				Rev      int64 `json:"rev"`
				FolderID int64 `json:"folder_id"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &ev); err != nil {
			h.t.Errorf("body %s: %v", body, err)
		}
		if h.failDoc == 0 {
			h.failDoc = ev.Data.DocID
		}
		if ev.Data.DocID == h.failDoc {
			h.requests++
			if h.requests <= h.failFirst {
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
		}
		h.events = append(h.events, hookEvent{ID: id, Type: ev.Type, Doc: ev.Data.DocID, Rev: ev.Data.Rev, Folder: ev.Data.FolderID})
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) received() []hookEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookEvent(nil), h.events...)
}

// subscribe has admin subscribe the receiver (spec.URL: the receiver's
// own when empty; a path is added to it when it starts with "/"), keeps
// the signing secret to verify with, and removes the subscription when
// the test ends.
func (h *hookReceiver) subscribe(admin *rest.Client, spec rest.WebhookSpec) *rest.NewWebhook {
	h.t.Helper()
	if spec.URL == "" || strings.HasPrefix(spec.URL, "/") {
		spec.URL = h.srv.URL + spec.URL
	}
	created, err := admin.CreateWebhook(context.Background(), spec)
	if err != nil {
		h.t.Fatal(err)
	}
	h.mu.Lock()
	h.secret = created.Secret
	h.mu.Unlock()
	h.t.Cleanup(func() { _ = admin.DeleteWebhook(context.Background(), created.Webhook.WebhookID) })
	return created
}

// Through the whole stack: an administrator subscribes a receiver for a
// user; the user's uploads and changes arrive signed, in each document's
// order, the first after the receiver answered 500 three times; another
// user's document never arrives; the delivery log shows it all; and the
// subscription, once removed, sends nothing more.
func TestWebhooksThroughTheStack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	owner := newDocUser(t)
	stranger := newDocUser(t)
	admin := newUser(t, []string{uniq("g")}, auth.ScopeWebhooks).rest()
	rcv := newHookReceiver(t, 3)
	created := rcv.subscribe(admin, rest.WebhookSpec{URL: "/hook", Owner: owner.username,
		EventTypes: []string{"document.created", "document.updated", "document.locked", "document.unlocked"}})
	hook := created.Webhook.WebhookID
	if !strings.HasPrefix(created.Secret, "whsec_") || created.Webhook.Owner != owner.username {
		t.Fatalf("created = %+v", created)
	}
	// The secret is sealed at rest: not in clear in its row.
	var clear *string
	var sealed []byte
	if err := stk.pool.QueryRow(ctx, `SELECT secret, secret_sealed FROM document.webhook_subscriptions WHERE id = $1`, hook).
		Scan(&clear, &sealed); err != nil || clear != nil || len(sealed) == 0 ||
		bytes.Contains(sealed, []byte(strings.TrimPrefix(created.Secret, "whsec_"))) {
		t.Fatalf("the stored secret: clear %v, sealed %d bytes, %v", clear, len(sealed), err)
	}

	// Bad subscriptions are 4xx with a detail.
	for _, bad := range []rest.WebhookSpec{
		{URL: "ftp://x", Owner: owner.username, EventTypes: []string{"document.*"}},
		{URL: rcv.srv.URL, Owner: owner.username, EventTypes: []string{"folder.renamed"}},
		{URL: rcv.srv.URL, Owner: uniq("nobody"), EventTypes: []string{"document.*"}},
		{URL: rcv.srv.URL, Owner: owner.username, EventTypes: []string{"document.*"}, Secret: "not-a-secret"},
	} {
		if _, err := admin.CreateWebhook(ctx, bad); rest.StatusOf(err)/100 != 4 || rest.DetailOf(err) == "" {
			t.Errorf("%+v: %v, want a 4xx with a detail", bad, err)
		}
	}

	oc := owner.rest()
	docs := make([]int64, 3)
	for i := range docs {
		up, err := oc.Upload(ctx, rest.Upload{FolderID: owner.folder.FolderID, File: strings.NewReader(uniq("text")), Filename: "h.txt", ContentType: "text/plain"})
		if err != nil {
			t.Fatal(err)
		}
		docs[i] = up.DocID
	}
	hidden := stranger.uploadFile("s.txt", uniqText(t, 20)).DocID
	for round := range 3 {
		for _, d := range docs {
			if _, err := oc.UpdateDocument(ctx, d, rest.DocumentPatch{DocStatus: rest.Ptr(fmt.Sprint("s", round))}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := stranger.rest().UpdateDocument(ctx, hidden, rest.DocumentPatch{DocStatus: rest.Ptr("x")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := oc.Lock(ctx, docs[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := oc.Unlock(ctx, docs[0]); err != nil {
		t.Fatal(err)
	}
	const want = 3 + 9 + 2
	eventually(t, 60*time.Second, func() error {
		if n := len(rcv.received()); n < want {
			return fmt.Errorf("received %d events, want %d", n, want)
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond)
	got := rcv.received()
	if len(got) != want {
		t.Fatalf("received %d events, want %d: %+v", len(got), want, got)
	}
	rev := map[int64]int64{}
	seen := map[string]bool{}
	for _, ev := range got {
		if ev.Doc == hidden {
			t.Fatalf("the owner's webhook received another user's document: %+v", ev)
		}
		if ev.Rev <= rev[ev.Doc] {
			t.Errorf("document %d: rev %d after %d: %+v", ev.Doc, ev.Rev, rev[ev.Doc], got)
		}
		rev[ev.Doc] = ev.Rev
		if seen[ev.ID] {
			t.Errorf("message %s twice", ev.ID)
		}
		seen[ev.ID] = true
	}
	if got[0].Type != "document.created" {
		t.Errorf("first event %+v", got[0])
	}

	log, err := admin.Deliveries(ctx, hook, rest.DeliveryQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	retried := 0
	for _, d := range log {
		if d.State != "delivered" || d.LastStatus != 204 || d.DeliveredAt == nil {
			t.Errorf("delivery %+v", d)
		}
		if d.Attempts == 4 {
			retried++
		}
	}
	if len(log) != want || retried != 1 {
		t.Errorf("%d deliveries, %d retried 3 times: %+v", len(log), retried, log)
	}
	hooks, err := admin.Webhooks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(hooks)
	if strings.Contains(string(raw), created.Secret) {
		t.Error("the listing shows a secret")
	}
	// Webhooks need their scope; an unknown subscription is 404.
	if _, err := owner.withKey(auth.ScopeDocumentsRead, auth.ScopeDocumentsWrite, auth.ScopeAudit).rest().Webhooks(ctx); rest.StatusOf(err) != 403 {
		t.Errorf("listing without the webhooks scope: %v", err)
	}
	if _, err := admin.Deliveries(ctx, hook+100000, rest.DeliveryQuery{}); rest.StatusOf(err) != 404 {
		t.Errorf("unknown webhook: %v", err)
	}

	if err := admin.DeleteWebhook(ctx, hook); err != nil {
		t.Fatal(err)
	}
	if _, err := oc.UpdateDocument(ctx, docs[1], rest.DocumentPatch{DocStatus: rest.Ptr("after")}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if n := len(rcv.received()); n != want {
		t.Errorf("%d events after the subscription was removed", n-want)
	}
}

// docrepoctl webhook add, list, deliveries, redeliver and rm against the
// stack: a receiver that is down makes dead deliveries after the retry
// period of a variant document service; redelivered, they arrive.
func TestDocrepoctlWebhook(t *testing.T) {
	t.Parallel()
	owner := newDocUser(t)
	admin := newUser(t, []string{uniq("g")}, auth.ScopeWebhooks)
	rcv := newHookReceiver(t, 0)
	ctl := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(docrepoctl(t), append([]string{"webhook", args[0], "-url", stk.baseURL}, args[1:]...)...)
		cmd.Env = append(os.Environ(), "DOCREPO_TOKEN="+admin.token)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("docrepoctl webhook %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := ctl("add", "-owner", owner.username, "-events", "document.created", rcv.srv.URL)
	var hook int64
	var secret string
	if _, err := fmt.Sscanf(out, "webhook %d:", &hook); err != nil {
		t.Fatalf("add printed %q", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if s, ok := strings.CutPrefix(line, "secret (shown once): "); ok {
			secret = s
		}
	}
	rcv.mu.Lock()
	rcv.secret = secret
	rcv.mu.Unlock()
	t.Cleanup(func() { _ = admin.rest().DeleteWebhook(context.Background(), hook) })
	if list := ctl("list"); !strings.Contains(list, rcv.srv.URL) || strings.Contains(list, secret) {
		t.Errorf("list printed %q", list)
	}
	doc := owner.uploadFile("c.txt", uniqText(t, 20)).DocID
	var delivery int64
	eventually(t, 60*time.Second, func() error {
		ds, err := admin.rest().Deliveries(context.Background(), hook, rest.DeliveryQuery{State: "delivered"})
		if err != nil || len(ds) != 1 || ds[0].DocID != doc {
			return fmt.Errorf("deliveries %+v, %v", ds, err)
		}
		delivery = ds[0].DeliveryID
		return nil
	})
	if d := ctl("deliveries", strconv.FormatInt(hook, 10)); !strings.Contains(d, "document.created") || !strings.Contains(d, "delivered") {
		t.Errorf("deliveries printed %q", d)
	}
	if r := ctl("redeliver", strconv.FormatInt(hook, 10), strconv.FormatInt(delivery, 10)); !strings.Contains(r, "pending again") {
		t.Errorf("redeliver printed %q", r)
	}
	eventually(t, 30*time.Second, func() error {
		if n := len(rcv.received()); n != 2 {
			return fmt.Errorf("received %d", n)
		}
		return nil
	})
	if got := rcv.received(); got[0].ID != got[1].ID || got[0].Doc != doc {
		t.Errorf("the redelivery is not the same message: %+v", got)
	}
	if r := ctl("rm", strconv.FormatInt(hook, 10)); !strings.Contains(r, "removed") {
		t.Errorf("rm printed %q", r)
	}
	if list := ctl("list"); strings.Contains(list, rcv.srv.URL) {
		t.Errorf("list after rm printed %q", list)
	}
}

// A document's whole life — upload, delete, restore, delete, purge — is
// in the audit feed after its rows are gone, and reaches its owner's
// webhook in order, document.purged included (its groups then come from
// the audit trail); its history is 404 once it is not visible.
func TestTrashLifeInTheAuditTrailAndWebhooks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := newDocUser(t)
	c := u.rest()
	admin := newUser(t, []string{uniq("g")}, auth.ScopeAudit, auth.ScopeWebhooks).rest()
	rcv := newHookReceiver(t, 0)
	rcv.subscribe(admin, rest.WebhookSpec{Owner: u.username, EventTypes: []string{"document.*"}})
	start := time.Now().Add(-time.Second)

	doc := u.uploadFile("life.txt", uniqText(t, 30)).DocID
	steps := []func() error{
		func() error { _, err := c.DeleteDocument(ctx, doc); return err },
		func() error { _, err := c.RestoreDocument(ctx, doc); return err },
		func() error { _, err := c.DeleteDocument(ctx, doc); return err },
		func() error { _, err := c.PurgeDocument(ctx, doc); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
	}
	if _, err := c.History(ctx, doc, "", 0); rest.StatusOf(err) != 404 {
		t.Errorf("history of a purged document: %v", err)
	}
	want := "document.created document.deleted document.restored document.deleted document.purged"
	eventually(t, 30*time.Second, func() error {
		page, err := admin.Audit(ctx, rest.AuditQuery{User: u.username, Actions: []string{"document.*"}, Since: start})
		if err != nil {
			return err
		}
		var got []string
		for _, e := range page.Entries {
			if e.ObjectID == doc {
				got = append(got, e.Action)
			}
		}
		if strings.Join(got, " ") != want {
			return fmt.Errorf("feed for the document: %v, want %s", got, want)
		}
		return nil
	})
	eventually(t, 30*time.Second, func() error {
		var got []string
		for _, ev := range rcv.received() {
			if ev.Doc == doc {
				got = append(got, ev.Type)
			}
		}
		if strings.Join(got, " ") != want {
			return fmt.Errorf("webhook received %v, want %s", got, want)
		}
		return nil
	})
}

// A delivery that dies (its receiver failed for the whole retry period)
// pauses the webhook: the document's next event is recorded but not sent,
// so the receiver never gets it while missing the first; the pause and
// the counts are visible in the listing, and a resume sends the dead
// delivery first, then the later one.
func TestWebhookPausesOnADeadDeliveryAndResumesInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	owner := newDocUser(t)
	admin := newUser(t, []string{uniq("g")}, auth.ScopeWebhooks).rest()
	rcv := newHookReceiver(t, 1<<30)
	created := rcv.subscribe(admin, rest.WebhookSpec{Owner: owner.username, EventTypes: []string{"document.*"}})
	hook := created.Webhook.WebhookID
	if created.Webhook.State != "active" {
		t.Fatalf("a new webhook is %q", created.Webhook.State)
	}
	webhook := func() rest.Webhook {
		t.Helper()
		hooks, err := admin.Webhooks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hooks {
			if h.WebhookID == hook {
				return h
			}
		}
		t.Fatalf("webhook %d is not listed", hook)
		return rest.Webhook{}
	}
	oc := owner.rest()
	doc := owner.uploadText("paused.txt", uniq("paused"))
	// The retry period is 10 s; an attempt whose outcome could not be
	// recorded comes back after its lease (35 s), so allow a few.
	eventually(t, 180*time.Second, func() error {
		if h := webhook(); h.State != "paused" || h.Dead != 1 || h.PausedAt == nil || !strings.Contains(h.PausedReason, "HTTP 500") {
			return fmt.Errorf("webhook %+v, want paused with one dead delivery", h)
		}
		return nil
	})
	if _, err := oc.UpdateDocument(ctx, doc, rest.DocumentPatch{DocStatus: rest.Ptr("After")}); err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	rcv.failFirst = 0 // the receiver works again
	rcv.mu.Unlock()
	eventually(t, 30*time.Second, func() error {
		if h := webhook(); h.State != "paused" || h.Pending != 1 {
			return fmt.Errorf("webhook %+v, want paused with the update pending", h)
		}
		return nil
	})
	if got := rcv.received(); len(got) != 0 {
		t.Fatalf("received while paused: %v", got)
	}
	dead, err := admin.Deliveries(ctx, hook, rest.DeliveryQuery{State: "dead"})
	if err != nil || len(dead) != 1 || dead[0].EventType != "document.created" || dead[0].DocID != doc {
		t.Fatalf("dead deliveries = %+v, %v", dead, err)
	}
	_, _, err = admin.ResumeWebhook(ctx, hook+1_000_000, false)
	wantStatus(t, "resume of an unknown webhook", err, 404)
	h, requeued, err := admin.ResumeWebhook(ctx, hook, false)
	if err != nil || requeued != 1 || h.State != "active" || h.PausedAt != nil {
		t.Fatalf("resume = %+v, %d, %v", h, requeued, err)
	}
	eventually(t, 30*time.Second, func() error {
		if got := rcv.received(); len(got) != 2 {
			return fmt.Errorf("received %v", got)
		}
		return nil
	})
	got := rcv.received()
	if got[0].Type != "document.created" || got[1].Type != "document.updated" || got[0].Doc != doc || got[1].Doc != doc ||
		got[0].ID != dead[0].MessageID {
		t.Fatalf("received %+v, want the dead created (%s) then the update", got, dead[0].MessageID)
	}
}

// Folder events reach webhooks through the stack: a subscription to
// folder.* hears its owner's folder being created, moved and deleted, in
// order, with the deleted subtree; another owner's subscription hears
// only its own folders.
func TestWebhookFolderEventsThroughTheStack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	owner := newDocUser(t)
	stranger := newDocUser(t)
	admin := newUser(t, []string{uniq("g")}, auth.ScopeWebhooks).rest()
	subscribe := func(u *docUser) *hookReceiver {
		rcv := newHookReceiver(t, 0)
		rcv.subscribe(admin, rest.WebhookSpec{Owner: u.username, EventTypes: []string{"folder.*"}})
		return rcv
	}
	mine, theirs := subscribe(owner), subscribe(stranger)
	oc := owner.rest()
	a, err := oc.CreateFolder(ctx, uniq("hookA"), 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := oc.CreateFolder(ctx, "B", a.FolderID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oc.MoveFolder(ctx, b.FolderID, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := oc.DeleteFolder(ctx, a.FolderID); err != nil {
		t.Fatal(err)
	}
	// The stranger's own folder comes after the owner's events in the
	// stream: once it has arrived, the owner's would have too. (Each
	// user's first folder, made before the subscriptions, may arrive as
	// well: a subscription hears what is consumed after it exists.)
	theirsID, err := stranger.rest().CreateFolder(ctx, uniq("theirs"), 0)
	if err != nil {
		t.Fatal(err)
	}
	about := func(h *hookReceiver, ids ...int64) []string {
		var out []string
		for _, e := range h.received() {
			if slices.Contains(ids, e.Folder) {
				out = append(out, fmt.Sprintf("%s %d", e.Type, e.Folder))
			}
		}
		return out
	}
	eventually(t, 60*time.Second, func() error {
		if len(about(mine, a.FolderID, b.FolderID)) != 4 || len(about(theirs, theirsID.FolderID)) != 1 {
			return fmt.Errorf("received %v and %v", mine.received(), theirs.received())
		}
		return nil
	})
	if got, want := about(mine, a.FolderID, b.FolderID), []string{fmt.Sprintf("folder.created %d", a.FolderID), fmt.Sprintf("folder.created %d", b.FolderID),
		fmt.Sprintf("folder.moved %d", b.FolderID), fmt.Sprintf("folder.deleted %d", a.FolderID)}; !slices.Equal(got, want) {
		t.Fatalf("owner's webhook received %v, want %v", got, want)
	}
	if got := about(theirs, a.FolderID, b.FolderID); len(got) != 0 {
		t.Fatalf("the stranger's webhook received the owner's folders: %v", got)
	}
	for _, e := range theirs.received() {
		if e.Folder != theirsID.FolderID && e.Folder != stranger.folder.FolderID {
			t.Fatalf("the stranger's webhook received %+v", e)
		}
	}
}
