package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/auth"
	rest "github.com/docrepo/docrepo/pkg/client"
)

// A scripted sequence of 20 operations (two refused) through the gateway
// leaves exactly its entries in the audit trail: in a document's history
// (in order, with who, the request id and what changed) and in the
// admin feed (document and folder entries merged in order, filtered by
// user, action and time, and paged by cursor to the same list).
func TestAuditTrailOfAScriptedSequence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	grid, _ := customTemplates(t)
	g := uniq("g")
	u := newUser(t, []string{g})
	c := u.rest()
	start := time.Now().Add(-time.Second)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	upload := func(folder int64, name, text string) int64 {
		t.Helper()
		up, err := c.Upload(ctx, rest.Upload{FolderID: folder, File: strings.NewReader(text), Filename: name, ContentType: "text/plain"})
		must(err)
		return up.DocID
	}

	a, err := c.CreateFolder(ctx, uniq("A"), 0) // 1
	must(err)
	b, err := c.CreateFolder(ctx, "B", a.FolderID) // 2
	must(err)
	cf, err := c.CreateFolder(ctx, uniq("C"), 0) // 3
	must(err)
	doc1 := upload(a.FolderID, "one.txt", "first")                                        // 4
	_, err = c.UpdateDocument(ctx, doc1, rest.DocumentPatch{DocStatus: rest.Ptr("Open")}) // 5
	must(err)
	_, err = c.Lock(ctx, doc1) // 6
	must(err)
	_, err = c.UpdateDocument(ctx, doc1, rest.DocumentPatch{DocStatus: rest.Ptr("x")}) // 7: refused, 423
	if rest.StatusOf(err) != 423 {
		t.Fatalf("update while locked: %v", err)
	}
	_, err = c.Unlock(ctx, doc1) // 8
	must(err)
	_, err = c.UploadVersion(ctx, doc1, rest.Version{File: strings.NewReader("second"), Filename: "two.txt", ContentType: "text/plain"}) // 9
	must(err)
	_, err = c.SetCustomFields(ctx, doc1, grid.ID, []map[string]any{{"title": "One", "qty": 2}}) // 10
	must(err)
	_, err = c.SetCustomFields(ctx, doc1, grid.ID, []map[string]any{}) // 11
	must(err)
	_, err = c.UpdateDocument(ctx, doc1, rest.DocumentPatch{Description: rest.Ptr("Renamed"), DocStatus: rest.Ptr("Done")}) // 12
	must(err)
	_, err = c.MoveFolder(ctx, b.FolderID, cf.FolderID) // 13
	must(err)
	doc2 := upload(b.FolderID, "three.txt", "third") // 14
	_, err = c.Lock(ctx, doc2)                       // 15
	must(err)
	_, err = c.Lock(ctx, doc2) // 16: already held, changes nothing
	must(err)
	_, err = c.Unlock(ctx, doc2) // 17
	must(err)
	_, err = c.UpdateDocument(ctx, doc2, rest.DocumentPatch{FromEntity: rest.Ptr("ACME")}) // 18
	must(err)
	_, err = c.DeleteFolder(ctx, a.FolderID) // 19: doc1 loses its folder (the document service's change)
	must(err)
	_, err = c.MoveFolder(ctx, cf.FolderID, 0) // 20: already at the root, still a move
	must(err)

	// doc1's history: the user's changes, then the folder removal by the
	// document service on the deletion's request.
	var hist []rest.AuditEntry
	eventually(t, 20*time.Second, func() error {
		page, err := c.History(ctx, doc1, "", 0)
		if err != nil {
			return err
		}
		hist = page.Entries
		if len(hist) != 9 {
			return fmt.Errorf("history has %d entries, want 9: %s", len(hist), actions(hist))
		}
		return nil
	})
	want := "document.created document.updated document.locked document.unlocked document.file_replaced " +
		"document.customfields_changed document.customfields_changed document.updated document.folders_changed"
	if got := actions(hist); got != want {
		t.Fatalf("history of doc1:\n got %s\nwant %s", got, want)
	}
	for i, e := range hist[:8] {
		if e.Actor.Username != u.username || e.Actor.KeyID != u.keyID || e.RequestID == "" || e.Source != "document" || e.ObjectID != doc1 {
			t.Errorf("entry %d: %+v", i, e)
		}
	}
	if e := hist[8]; e.Actor.Service != "document" || e.Actor.Username != "" || e.RequestID == "" {
		t.Errorf("folder removal entry: %+v", e)
	}
	var upd struct {
		Before map[string]any `json:"before"`
		After  map[string]any `json:"after"`
	}
	must(json.Unmarshal(hist[7].Details, &upd))
	if upd.Before["description"] != "one.txt" || upd.Before["doc_status"] != "Open" || upd.After["description"] != "Renamed" ||
		upd.After["doc_status"] != "Done" || len(upd.After) != 2 {
		t.Errorf("update details: %s", hist[7].Details)
	}
	var rows struct {
		Before []map[string]any `json:"before"`
		After  []map[string]any `json:"after"`
	}
	must(json.Unmarshal(hist[6].Details, &rows))
	if len(rows.Before) != 1 || rows.Before[0]["title"] != "One" || len(rows.After) != 0 {
		t.Errorf("custom-field details: %s", hist[6].Details)
	}
	// Paging the history by its cursor gives the same entries.
	var paged []rest.AuditEntry
	for cur := ""; ; {
		page, err := c.History(ctx, doc1, cur, 4)
		must(err)
		if len(page.Entries) == 0 {
			break
		}
		paged = append(paged, page.Entries...)
		cur = page.NextCursor
	}
	if actions(paged) != want {
		t.Errorf("paged history: %s", actions(paged))
	}

	// Someone else cannot see the document, so not its history either.
	other := newUser(t, []string{uniq("g")}).rest()
	if _, err := other.History(ctx, doc1, "", 0); rest.StatusOf(err) != 404 || rest.DetailOf(err) != "Document not found" {
		t.Errorf("another user's history: %v", err)
	}
	if _, err := c.History(ctx, doc1, "abc", 0); rest.StatusOf(err) != 400 {
		t.Errorf("bad cursor: %v", err)
	}

	// The feed: every change the user made, document and folder ones
	// merged in the order they were made.
	adminUser := newUser(t, []string{uniq("g")}, auth.ScopeAudit)
	admin := adminUser.rest()
	wantFeed := []string{
		"folder.created", "folder.created", "folder.created", "document.created", "document.updated", "document.locked",
		"document.unlocked", "document.file_replaced", "document.customfields_changed", "document.customfields_changed",
		"document.updated", "folder.moved", "document.created", "document.locked", "document.unlocked", "document.updated",
		"folder.deleted", "folder.moved",
	}
	q := rest.AuditQuery{User: u.username, Since: start}
	var feed []rest.AuditEntry
	eventually(t, 30*time.Second, func() error {
		page, err := admin.Audit(ctx, q)
		if err != nil {
			return err
		}
		feed = page.Entries
		if len(feed) < len(wantFeed) {
			return fmt.Errorf("feed has %d entries, want %d: %s", len(feed), len(wantFeed), actions(feed))
		}
		return nil
	})
	if got := actions(feed); got != strings.Join(wantFeed, " ") {
		t.Fatalf("feed:\n got %s\nwant %s", got, strings.Join(wantFeed, " "))
	}
	// Paged three at a time by the cursor: the same entries.
	var walked []rest.AuditEntry
	for pq := q; ; {
		pq.Limit = 3
		page, err := admin.Audit(ctx, pq)
		must(err)
		if len(page.Entries) == 0 {
			break
		}
		walked = append(walked, page.Entries...)
		pq.Cursor = page.NextCursor
	}
	if actions(walked) != actions(feed) || !slices.EqualFunc(walked, feed, func(x, y rest.AuditEntry) bool { return x.ID == y.ID && x.Source == y.Source }) {
		t.Errorf("walked by cursor:\n%s", actions(walked))
	}
	// Filters: an object type, exact actions, the time range.
	folders, err := admin.Audit(ctx, rest.AuditQuery{User: u.username, Actions: []string{"folder.*"}, Since: start})
	must(err)
	if got := actions(folders.Entries); got != "folder.created folder.created folder.created folder.moved folder.deleted folder.moved" {
		t.Errorf("folder.*: %s", got)
	}
	locks, err := admin.Audit(ctx, rest.AuditQuery{User: u.username, Actions: []string{"document.locked", "document.unlocked"}, Since: start})
	must(err)
	if got := actions(locks.Entries); got != "document.locked document.unlocked document.locked document.unlocked" {
		t.Errorf("locks: %s", got)
	}
	before, err := admin.Audit(ctx, rest.AuditQuery{User: u.username, Until: start})
	must(err)
	if len(before.Entries) != 0 {
		t.Errorf("entries before the start: %s", actions(before.Entries))
	}
	// The key's creation is in the feed too (identity's part).
	keys, err := admin.Audit(ctx, rest.AuditQuery{Actions: []string{"api_key.created"}, Since: start})
	must(err)
	if !slices.ContainsFunc(keys.Entries, func(e rest.AuditEntry) bool { return e.ObjectID == u.keyID && e.Source == "identity" }) {
		t.Errorf("the user's key creation is missing: %s", actions(keys.Entries))
	}

	// Bad input is a 400 with a detail; the feed needs the audit scope.
	for _, bad := range []rest.AuditQuery{{Actions: []string{"Document"}}, {Cursor: "!!"}, {Limit: 5000}} {
		if _, err := admin.Audit(ctx, bad); rest.StatusOf(err) != 400 || rest.DetailOf(err) == "" {
			t.Errorf("%+v: %v, want 400", bad, err)
		}
	}
	if r := adminUser.do("GET", "/apiv2/pub/audit?since=yesterday", nil); r.Status != 400 || !strings.Contains(r.Detail(t), "RFC 3339") {
		t.Errorf("since=yesterday: %d %s", r.Status, r.Body)
	}
	if _, err := c.WithToken(u.withKey(auth.ScopeDocumentsRead).token).Audit(ctx, rest.AuditQuery{}); rest.StatusOf(err) != 403 {
		t.Errorf("feed without the audit scope: %v", err)
	}
}

func actions(es []rest.AuditEntry) string {
	var out []string
	for _, e := range es {
		out = append(out, e.Action)
	}
	return strings.Join(out, " ")
}

// docrepoctl audit prints the feed through the REST API, and -follow
// prints an entry made after it started.
func TestDocrepoctlAuditPrintsAndFollows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := newUser(t, []string{uniq("g")})
	c := u.rest()
	first, err := c.CreateFolder(ctx, uniq("first"), 0)
	if err != nil {
		t.Fatal(err)
	}
	admin := newUser(t, []string{uniq("g")}, auth.ScopeAudit)
	run := func(extra ...string) *exec.Cmd {
		cmd := exec.Command(docrepoctl(t), append([]string{"audit", "-url", stk.baseURL, "-user", u.username, "-action", "folder.*"}, extra...)...)
		cmd.Env = append(os.Environ(), "DOCREPO_TOKEN="+admin.token)
		return cmd
	}
	eventually(t, 30*time.Second, func() error {
		out, err := run().CombinedOutput()
		if err != nil {
			return fmt.Errorf("docrepoctl audit: %v: %s", err, out)
		}
		if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 1 ||
			!strings.Contains(lines[0], "folder.created") || !strings.Contains(lines[0], u.username) ||
			!strings.Contains(lines[0], fmt.Sprint(first.FolderID)) {
			return fmt.Errorf("docrepoctl audit printed %q", out)
		}
		return nil
	})

	cmd := run("-follow", "-interval", "200ms")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	second, err := c.CreateFolder(ctx, uniq("second"), 0)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		if s := out.String(); strings.Count(s, "folder.created") != 2 || !strings.Contains(s, fmt.Sprint(second.FolderID)) {
			return fmt.Errorf("docrepoctl audit -follow printed %q", s)
		}
		return nil
	})
}

// A trashed document's history stays readable to whoever sees it in the
// trash (not to another group); once purged, its history is 404 for its
// users and its entries are read by an administrator from the feed,
// through the REST filter and docrepoctl audit -object.
func TestHistoryOfTrashedAndPurgedDocuments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := newDocUser(t)
	other := newDocUser(t)
	c := u.rest()
	id := u.uploadText("hist.txt", "history of a trashed document")
	if _, err := c.DeleteDocument(ctx, id); err != nil {
		t.Fatal(err)
	}
	h, err := c.History(ctx, id, "", 0)
	if err != nil {
		t.Fatalf("history of a trashed document: %v", err)
	}
	if got := actions(h.Entries); got != "document.created document.deleted" {
		t.Fatalf("history of the trashed document = %s", got)
	}
	_, err = other.rest().History(ctx, id, "", 0)
	wantStatus(t, "another group's history of the trashed document", err, 404)

	if _, err := c.PurgeDocument(ctx, id); err != nil {
		t.Fatal(err)
	}
	_, err = c.History(ctx, id, "", 0)
	wantStatus(t, "history of a purged document", err, 404)

	admin := newUser(t, []string{uniq("g")}, auth.ScopeAudit)
	ac := admin.rest()
	eventually(t, 30*time.Second, func() error {
		page, err := ac.Audit(ctx, rest.AuditQuery{ObjectType: "document", ObjectID: id})
		if err != nil {
			return err
		}
		if got := actions(page.Entries); got != "document.created document.deleted document.purged" {
			return fmt.Errorf("feed of document %d = %q", id, got)
		}
		return nil
	})
	for _, bad := range []string{"object_id=5", "object_type=Doc!", "object_type=document&object_id=-1"} {
		if r := admin.do("GET", "/apiv2/pub/audit?"+bad, nil); r.Status != 400 || r.Detail(t) == "" {
			t.Errorf("%s: %d %s, want 400", bad, r.Status, r.Body)
		}
	}
	cmd := exec.Command(docrepoctl(t), "audit", "-url", stk.baseURL, "-object", fmt.Sprintf("document:%d", id))
	cmd.Env = append(os.Environ(), "DOCREPO_TOKEN="+admin.token)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docrepoctl audit -object: %v: %s", err, out)
	}
	if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 3 || !strings.Contains(lines[2], "document.purged") {
		t.Fatalf("docrepoctl audit -object printed %q", out)
	}
}
