package audit

import (
	"fmt"
	"testing"
	"time"
)

func TestCursorRoundTrips(t *testing.T) {
	tests := []struct {
		name string
		cur  Cursor
	}{
		{name: "start", cur: Cursor{}},
		{name: "one owner", cur: Cursor{"document": {TxID: 1 << 40, ID: 7}}},
		{name: "every owner", cur: Cursor{"document": {TxID: 5, ID: 9}, "folder": {TxID: 4, ID: 1}, "identity": {TxID: 3, ID: 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCursor(tt.cur.String())
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.cur) {
				t.Fatalf("round trip: %v, want %v", got, tt.cur)
			}
		})
	}
}

func TestParseCursorRefusesWhatItDidNotMake(t *testing.T) {
	for _, s := range []string{"!", "ZG9jdW1lbnQ", "ZG9jdW1lbnQ6eDox", Cursor{"a": {1, -1}}.String(), "ZG9jOjE6MTtkb2M6MTox"} {
		if _, err := ParseCursor(s); err == nil {
			t.Errorf("ParseCursor(%q) = nil error", s)
		}
	}
}

func rec(src string, id int64, at time.Time) Record {
	return Record{Source: src, ID: id, TxID: uint64(id), OccurredAt: at}
}

// Merge takes the earliest heads first, keeps each owner's order even when
// its clock disagrees, and moves the cursor past exactly what it took.
func TestMergeInterleavesByTimeAndAdvancesTheCursor(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	parts := map[string][]Record{
		"document": {rec("document", 1, at(1)), rec("document", 2, at(4)), rec("document", 3, at(2))},
		"folder":   {rec("folder", 1, at(3))},
		"identity": {},
	}
	start := Cursor{"identity": {TxID: 9, ID: 9}}
	page, next := Merge(parts, start, 3)
	var got []string
	for _, r := range page {
		got = append(got, fmt.Sprintf("%s/%d", r.Source, r.ID))
	}
	if want := "[document/1 folder/1 document/2]"; fmt.Sprint(got) != want {
		t.Fatalf("page = %v, want %s", got, want)
	}
	want := Cursor{"document": {TxID: 2, ID: 2}, "folder": {TxID: 1, ID: 1}, "identity": {TxID: 9, ID: 9}}
	if fmt.Sprint(next) != fmt.Sprint(want) {
		t.Fatalf("cursor = %v, want %v", next, want)
	}
	if _, ok := start["document"]; ok {
		t.Fatal("Merge changed the cursor it was given")
	}
	rest, _ := Merge(map[string][]Record{"document": parts["document"][2:]}, next, 3)
	if len(rest) != 1 || rest[0].ID != 3 {
		t.Fatalf("next page = %+v, want document/3", rest)
	}
}
