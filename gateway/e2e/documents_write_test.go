package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// metadataKeys are exactly the fields of the docs/api.md §4.3 response.
var metadataKeys = []string{"date", "description", "doc_status", "doc_type", "from_entity", "id", "islocked",
	"privileged", "reference_number", "rev_number", "to_entity"}

// checkMetadataBody fails unless body holds exactly the §4.3 fields.
func checkMetadataBody(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	keys := slices.Sorted(maps.Keys(m))
	if !slices.Equal(keys, metadataKeys) {
		t.Fatalf("response keys = %v, want %v", keys, metadataKeys)
	}
	return m
}

func TestUpdateDocument(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	docType := newDocType(t, "Letter")
	res := u.uploadFile("letter.txt", uniqText(t, 200),
		field("description", "Original"), field("doc_status", "draft"), field("from_entity", "A"),
		field("account_number", "ACC"), field("date", "2023-01-02"))
	path := fmt.Sprintf("/apiv3/pub/documents/%d", res.DocID)
	before := u.getDoc(res.DocID, "")

	r := u.do("PATCH", path, map[string]any{"doc_status": "final", "doc_type": docType, "date": "2024-06-30T10:20:30Z", "privileged": true})
	expect(t, r, 200)
	m := checkMetadataBody(t, r.Body)
	if m["doc_status"] != "final" || m["doc_type"] != docType || m["description"] != "Original" || m["from_entity"] != "A" ||
		m["privileged"] != true || m["islocked"] != false || m["id"] != float64(res.DocID) || m["date"] != "2024-06-30T10:20:30Z" ||
		m["to_entity"] != nil {
		t.Fatalf("PATCH response = %s", r.Body)
	}
	after := u.getDoc(res.DocID, "")
	// Only the supplied fields changed; fields PATCH cannot touch stay.
	if !eqp(after.AccountNumber, "ACC") || after.Description != "Original" || !eqp(after.FromEntity, "A") ||
		after.EntryDate != before.EntryDate || after.LinkedFiles[0].Filehash != before.LinkedFiles[0].Filehash {
		t.Fatalf("after PATCH: %+v", after)
	}
	// Every field at once, empty strings clear optional fields.
	r = u.do("PATCH", path, map[string]any{"description": "New title", "doc_type": "", "doc_status": "", "from_entity": "B",
		"to_entity": "C", "rev_number": "2", "reference_number": "R-1", "date": "", "privileged": false})
	expect(t, r, 200)
	m = checkMetadataBody(t, r.Body)
	if m["description"] != "New title" || m["doc_type"] != nil || m["doc_status"] != nil || m["from_entity"] != "B" ||
		m["to_entity"] != "C" || m["rev_number"] != "2" || m["reference_number"] != "R-1" || m["date"] != nil || m["privileged"] != false {
		t.Fatalf("PATCH response = %s", r.Body)
	}
	// Limits are those of upload: exactly the maximum passes, one more is refused.
	expect(t, u.do("PATCH", path, map[string]any{"description": strings.Repeat("d", 400)}), 200)
	expect(t, u.do("PATCH", path, map[string]any{"rev_number": strings.Repeat("9", 10)}), 200)
	// Each successful write bumped rev and wrote one updated event.
	ev := docEvents(t, res.DocID)
	want := []outboxEvent{{"created", 1}, {"updated", 2}, {"updated", 3}, {"updated", 4}, {"updated", 5}}
	if !slices.Equal(ev, want) || docRev(t, res.DocID) != 5 {
		t.Fatalf("events = %+v (rev %d), want %+v", ev, docRev(t, res.DocID), want)
	}

	tests := []struct {
		name   string
		body   any
		status int
		detail string
	}{
		{name: "no fields", body: map[string]any{}, status: 400, detail: "No fields to update"},
		{name: "empty body", body: "", status: 400, detail: "No fields to update"},
		{name: "empty description", body: map[string]any{"description": ""}, status: 400, detail: "Invalid value for description: must not be empty"},
		{name: "blank description", body: map[string]any{"description": "   "}, status: 400, detail: "Invalid value for description: must not be empty"},
		{name: "description too long", body: map[string]any{"description": strings.Repeat("d", 401)}, status: 400,
			detail: "Invalid value for description: longer than 400 characters"},
		{name: "doc_status too long", body: map[string]any{"doc_status": strings.Repeat("s", 51)}, status: 400,
			detail: "Invalid value for doc_status: longer than 50 characters"},
		{name: "rev_number too long", body: map[string]any{"rev_number": strings.Repeat("9", 11)}, status: 400,
			detail: "Invalid value for rev_number: longer than 10 characters"},
		{name: "to_entity too long", body: map[string]any{"to_entity": strings.Repeat("t", 256)}, status: 400,
			detail: "Invalid value for to_entity: longer than 255 characters"},
		{name: "unknown doc_type", body: map[string]any{"doc_type": "Nope Type"}, status: 422, detail: "Unknown doc_type: Nope Type"},
		{name: "bad date", body: map[string]any{"date": "yesterday"}, status: 400,
			detail: "Invalid value for date: expected an ISO 8601 date such as 2024-05-31 or 2024-05-31T12:00:00Z"},
		{name: "wrong type", body: map[string]any{"privileged": "yes"}, status: 400},
		{name: "number for a string", body: map[string]any{"description": 5}, status: 400},
		{name: "unknown field", body: map[string]any{"colour": "red"}, status: 400},
		{name: "malformed JSON", body: `{"description":`, status: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := u.do("PATCH", path, tt.body)
			if tt.detail != "" {
				expect(t, r, tt.status, tt.detail)
			} else {
				expect(t, r, tt.status)
			}
		})
	}
	if got := docRev(t, res.DocID); got != 5 {
		t.Fatalf("refused updates changed rev to %d", got)
	}
	expect(t, u.do("PATCH", "/apiv3/pub/documents/999999999", map[string]any{"description": "x"}), 404, "Document not found")
	expect(t, u.do("PATCH", "/apiv3/pub/documents/abc", map[string]any{"description": "x"}), 400)
}

func TestLockUnlock(t *testing.T) {
	t.Parallel()
	g := uniq("g")
	alice := newUser(t, []string{g})
	bob := newUser(t, []string{g})
	f := alice.createFolder(uniq("Locks"), 0)
	au := &docUser{client: alice, group: g, folder: f}
	res := au.uploadFile("lock.txt", uniqText(t, 100))
	base := fmt.Sprintf("/apiv3/pub/documents/%d", res.DocID)

	r := alice.do("POST", base+"/lock", nil)
	expect(t, r, 200)
	if m := checkMetadataBody(t, r.Body); m["islocked"] != true {
		t.Fatalf("lock response = %s", r.Body)
	}
	d := bob.getDoc(res.DocID, "")
	if !d.Islocked || !eqp(d.LockedBy, alice.username) {
		t.Fatalf("locked document = %+v", d)
	}
	// Locking again is idempotent for the holder and changes nothing.
	expect(t, alice.do("POST", base+"/lock", nil), 200)
	// Others cannot lock or unlock it.
	expect(t, bob.do("POST", base+"/lock", nil), 423, "Document is locked by another user")
	expect(t, bob.do("POST", base+"/unlock", nil), 423, "Document is locked by another user")
	// Nobody may modify a locked document, the holder included (docs/api.md §3).
	for _, c := range []*client{alice, bob} {
		expect(t, c.do("PATCH", base, map[string]any{"description": "changed"}), 423, "Document is locked")
		expect(t, c.do("POST", base+"/versions", multipartParts(t, filePart("v2.txt", uniqText(t, 10)))), 423, "Document is locked")
	}
	// Reading and downloading still work.
	expect(t, bob.do("GET", "/apiv2/pub/documents/"+fmt.Sprint(res.DocID)+"/download", nil), 200)
	r = alice.do("POST", base+"/unlock", nil)
	expect(t, r, 200)
	if m := checkMetadataBody(t, r.Body); m["islocked"] != false {
		t.Fatalf("unlock response = %s", r.Body)
	}
	if d := bob.getDoc(res.DocID, ""); d.Islocked || d.LockedBy != nil {
		t.Fatalf("unlocked document = %+v", d)
	}
	// Unlocking an unlocked document is harmless; now bob may lock it.
	expect(t, alice.do("POST", base+"/unlock", nil), 200)
	expect(t, bob.do("POST", base+"/lock", nil), 200)
	expect(t, alice.do("PATCH", base, map[string]any{"description": "changed"}), 423, "Document is locked")
	expect(t, bob.do("POST", base+"/unlock", nil), 200)
	expect(t, alice.do("PATCH", base, map[string]any{"description": "changed"}), 200)

	want := []outboxEvent{{"created", 1}, {"locked", 2}, {"unlocked", 3}, {"locked", 4}, {"unlocked", 5}, {"updated", 6}}
	if ev := docEvents(t, res.DocID); !slices.Equal(ev, want) {
		t.Fatalf("events = %+v, want %+v", ev, want)
	}
	expect(t, alice.do("POST", "/apiv3/pub/documents/999999999/lock", nil), 404, "Document not found")
}
