package audit

import (
	"encoding/json"
	"testing"
	"time"

	auditv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/audit/v1"
)

func TestParseFilterLimitAndHistoryCursor(t *testing.T) {
	tests := []struct {
		name    string
		user    string
		actions []string
		since   string
		until   string
		wantErr bool
	}{
		{name: "empty"},
		{name: "everything", user: "ann", actions: []string{"document.updated", "folder.*"}, since: "2026-11-26T09:00:00Z", until: "2026-11-26T10:00:00.5+01:00"},
		{name: "not a time", since: "yesterday", wantErr: true},
		{name: "a date only", until: "2026-11-26", wantErr: true},
		{name: "since after until", since: "2026-11-26T10:00:00Z", until: "2026-11-26T09:00:00Z", wantErr: true},
		{name: "not an action", actions: []string{"Document"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseFilter(tt.user, tt.actions, tt.since, tt.until)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && tt.since != "" && f.Since.IsZero() {
				t.Errorf("since not parsed: %+v", f)
			}
		})
	}
	for _, l := range []int32{0, -1, MaxLimit + 1} {
		if _, err := ParseLimit(&l); err == nil {
			t.Errorf("limit %d accepted", l)
		}
	}
	objects := []struct {
		name    string
		f       Filter
		wantErr bool
	}{
		{name: "one document", f: Filter{ObjectType: "document", ObjectID: 42}},
		{name: "every folder", f: Filter{ObjectType: "folder"}},
		{name: "an id without a type", f: Filter{ObjectID: 42}, wantErr: true},
		{name: "a negative id", f: Filter{ObjectType: "document", ObjectID: -1}, wantErr: true},
		{name: "not a type", f: Filter{ObjectType: "Doc!"}, wantErr: true},
	}
	for _, tt := range objects {
		if err := tt.f.Check(); (err != nil) != tt.wantErr {
			t.Errorf("%s: err = %v, want error %v", tt.name, err, tt.wantErr)
		}
	}
	if n, err := ParseLimit(nil); err != nil || n != DefaultLimit {
		t.Errorf("no limit: %d, %v", n, err)
	}
	for _, c := range []string{"x", "-1", "1.5"} {
		if _, err := ParseHistoryCursor(c); err == nil {
			t.Errorf("history cursor %q accepted", c)
		}
	}
	if id, err := ParseHistoryCursor("42"); err != nil || id != 42 {
		t.Errorf("cursor 42: %d, %v", id, err)
	}
}

// A record survives the trip through ListAuditPart's messages (the folder
// service's part reaching the merge) with its position and details.
func TestRecordsRoundTripThroughAPart(t *testing.T) {
	r := Record{Source: "folder", ID: 7, TxID: 123456, OccurredAt: time.Date(2026, 11, 26, 9, 0, 0, 5000, time.UTC),
		Action: "folder.moved", ObjectType: "folder", ObjectID: 3, RequestID: "req",
		Actor:   Actor{UserID: 1, Username: "ann", KeyID: 9},
		Details: json.RawMessage(`{"after":{"parent_id":2},"moved_folder_ids":[3,4]}`)}
	resp := &auditv1.ListAuditPartResponse{Entries: []*auditv1.PartEntry{{Entry: ToProto(r), Txid: r.TxID}}}
	got := FromPart("folder", resp)
	if len(got) != 1 {
		t.Fatalf("%d records", len(got))
	}
	g := got[0]
	var want, have any
	_ = json.Unmarshal(r.Details, &want)
	_ = json.Unmarshal(g.Details, &have)
	wb, _ := json.Marshal(want)
	hb, _ := json.Marshal(have)
	g.Details, r.Details = nil, nil
	if !g.OccurredAt.Equal(r.OccurredAt) {
		t.Errorf("time %v, want %v", g.OccurredAt, r.OccurredAt)
	}
	g.OccurredAt = r.OccurredAt
	if string(wb) != string(hb) {
		t.Errorf("details %s, want %s", hb, wb)
	}
	if g.Position() != r.Position() || g.Actor != r.Actor || g.Action != r.Action || g.ObjectID != r.ObjectID || g.RequestID != r.RequestID {
		t.Errorf("record %+v, want %+v", g, r)
	}
}
