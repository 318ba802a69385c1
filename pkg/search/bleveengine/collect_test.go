package bleveengine

import (
	"cmp"
	"context"
	"slices"
	"testing"
)

// byScoreThenSlot orders matches as a scored search does: score
// descending, ties by slot (standing in for id) ascending.
func byScoreThenSlot(a, b match) int {
	if c := cmp.Compare(b.score, a.score); c != 0 {
		return c
	}
	return cmp.Compare(a.slot, b.slot)
}

func slotsOf(ms []match) []int32 {
	out := make([]int32, len(ms))
	for i, m := range ms {
		out[i] = m.slot
	}
	return out
}

func TestPageOfSortsByScoreThenSlotAndCutsTheWindow(t *testing.T) {
	all := func() []match {
		return []match{{slot: 4, score: 1}, {slot: 1, score: 3}, {slot: 2, score: 3}, {slot: 3, score: 2}, {slot: 0, score: 0.5}}
	}
	tests := []struct {
		name          string
		offset, limit int
		want          []int32
	}{
		{name: "first page", offset: 0, limit: 2, want: []int32{1, 2}},
		{name: "second page", offset: 2, limit: 2, want: []int32{3, 4}},
		{name: "last, short page", offset: 4, limit: 2, want: []int32{0}},
		{name: "past the end", offset: 5, limit: 2, want: nil},
		{name: "far past the end", offset: 100, limit: 20, want: nil},
		{name: "default limit", offset: 0, limit: 0, want: []int32{1, 2, 3, 4, 0}},
		{name: "everything", offset: 0, limit: 500, want: []int32{1, 2, 3, 4, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := slotsOf(pageOf(all(), tt.offset, tt.limit, byScoreThenSlot))
			if !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Fatalf("page = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNearestMatchesScoreByDistanceOrBM25(t *testing.T) {
	recs := make([]record, 4)
	nearest := []neighbour{{slot: 2, d2: 0}, {slot: 0, d2: 1}, {slot: 3, d2: 3}}
	matchEven := func(slot int32, _ *record) (bool, float64) { return slot%2 == 0, float64(10 + slot) }
	tests := []struct {
		name         string
		withFullText bool
		want         []match
	}{
		{name: "vector alone: 1/(1+d²)", want: []match{{slot: 2, score: 1}, {slot: 0, score: 0.5}, {slot: 3, score: 0.25}}},
		{name: "with fts: BM25 of the candidates that match", withFullText: true, want: []match{{slot: 2, score: 12}, {slot: 0, score: 10}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nearestMatches(nearest, recs, tt.withFullText, matchEven); !slices.Equal(got, tt.want) {
				t.Fatalf("matches = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestScanKeepsMatchingLiveSlotsInTheDriversOrder(t *testing.T) {
	recs := make([]record, 10)
	recs[3].deleted = true
	run := &searchRun{ctx: context.Background(), tab: &table{recs: recs}}
	all := func(*record) bool { return true }
	notDeleted := eligibility{visible: all, filters: func(int32, *record) (bool, float64) { return true, 0 }}
	multipleOf3 := func(slot int32, _ *record) (bool, float64) { return slot%3 == 0, float64(slot) }
	tests := []struct {
		name  string
		slots []int32
		want  []int32
	}{
		{name: "every slot (nil)", slots: nil, want: []int32{0, 6, 9}},
		{name: "only the driver's slots", slots: []int32{1, 3, 6, 7}, want: []int32{6}},
		{name: "the driver's slots in its order", slots: []int32{9, 0}, want: []int32{9, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := run.scan(tt.slots, notDeleted, multipleOf3)
			if err != nil {
				t.Fatal(err)
			}
			if s := slotsOf(got); !slices.Equal(s, tt.want) && !(len(s) == 0 && len(tt.want) == 0) {
				t.Fatalf("scan = %v, want %v", s, tt.want)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&searchRun{ctx: ctx, tab: &table{recs: recs}}).scan(nil, notDeleted, multipleOf3); err == nil {
		t.Fatal("scan of a cancelled search returned no error")
	}
}
