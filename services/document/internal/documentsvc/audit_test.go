package documentsvc

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/auth"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/logging"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// Each change of a document appends exactly one audit entry in its own
// transaction: who (the user, the key), the request, and what changed (an
// update's fields before and after); a refused change appends nothing; the
// removal of a deleted folder's assignments is the document service's own
// change, with the deletion's request id.
func TestDocumentChangesAreAudited(t *testing.T) {
	pool := pgtest.NewPool(t, Schema, Migrations()...)
	s := NewService(Deps{Pool: pool})
	bg := context.Background()
	var id int64
	if err := pool.QueryRow(bg, `INSERT INTO documents (description, doc_status, entry_person_id, entry_person)
		VALUES ('first', 'draft', 7, 'ann') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(bg, `INSERT INTO document_groups (doc_id, group_id) VALUES ($1, 3)`, id); err != nil {
		t.Fatal(err)
	}
	ann := &auth.Principal{KeyID: 11, UserID: 7, Username: "ann", GroupIDs: []int64{3}, Scopes: []string{auth.ScopeDocumentsWrite}}
	bob := &auth.Principal{KeyID: 12, UserID: 8, Username: "bob", GroupIDs: []int64{3}, Scopes: []string{auth.ScopeDocumentsWrite}}
	as := func(p *auth.Principal, rid string) context.Context {
		return logging.WithRequestID(auth.WithPrincipal(bg, p), rid)
	}
	desc, status := "second", "final"
	if _, err := s.UpdateDocument(as(ann, "r1"), &documentv1.UpdateDocumentRequest{DocId: id, Description: &desc, DocStatus: &status}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LockDocument(as(ann, "r2"), &documentv1.LockDocumentRequest{DocId: id}); err != nil {
		t.Fatal(err)
	}
	// Locking again changes nothing; bob's update and unlock are refused.
	if _, err := s.LockDocument(as(ann, "r3"), &documentv1.LockDocumentRequest{DocId: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateDocument(as(bob, "r4"), &documentv1.UpdateDocumentRequest{DocId: id, Description: &desc}); err == nil {
		t.Fatal("an update of a locked document succeeded")
	}
	if _, err := s.UnlockDocument(as(bob, "r5"), &documentv1.UnlockDocumentRequest{DocId: id}); err == nil {
		t.Fatal("bob unlocked ann's lock")
	}
	if _, err := s.UnlockDocument(as(ann, "r6"), &documentv1.UnlockDocumentRequest{DocId: id}); err != nil {
		t.Fatal(err)
	}
	if err := pgx.BeginFunc(bg, pool, func(tx pgx.Tx) error { return assignFolder(bg, tx, id, 42) }); err != nil {
		t.Fatal(err)
	}
	if err := s.forgetFolders(logging.WithRequestID(bg, "r7"), []int64{42, 43}); err != nil {
		t.Fatal(err)
	}

	recs, err := audit.In(Schema).History(bg, pool, "document", id, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Action, User, Service, RequestID string
		KeyID                            int64
		Details                          string
	}
	want := []entry{
		{Action: "document.updated", User: "ann", KeyID: 11, RequestID: "r1",
			Details: `{"after": {"doc_status": "final", "description": "second"}, "before": {"doc_status": "draft", "description": "first"}, "rev": 2}`},
		{Action: "document.locked", User: "ann", KeyID: 11, RequestID: "r2", Details: `{"rev": 3}`},
		{Action: "document.unlocked", User: "ann", KeyID: 11, RequestID: "r6", Details: `{"rev": 4}`},
		{Action: "document.folders_changed", Service: "document", RequestID: "r7",
			Details: `{"reason": "folder deleted", "removed_folder_ids": [42]}`},
	}
	var got []entry
	for _, r := range recs {
		got = append(got, entry{Action: r.Action, User: r.Actor.Username, Service: r.Actor.Service, RequestID: r.RequestID,
			KeyID: r.Actor.KeyID, Details: canonical(t, r.Details)})
	}
	if len(got) != len(want) {
		t.Fatalf("entries:\n%+v\nwant\n%+v", got, want)
	}
	for i := range want {
		want[i].Details = canonical(t, json.RawMessage(want[i].Details))
		if got[i] != want[i] {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

// canonical re-encodes a JSON object with sorted keys and no spaces.
func canonical(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
