package engine

import (
	"errors"
	"testing"
)

// TestRerankDistance: the second stage's arithmetic both engines apply:
// within Depth d² + 2·Weight·(1 − Score), Score clamped to [−1, 1], the
// content read once; past Depth d² + 4·Weight, the content not read; an
// error reading the content is returned.
func TestRerankDistance(t *testing.T) {
	errRead := errors.New("read")
	for _, tc := range []struct {
		name    string
		rank    int
		d2      float32
		score   float64
		readErr error
		want    float32
		reads   int
	}{
		{name: "best score adds nothing", rank: 0, d2: 0.5, score: 1, want: 0.5, reads: 1},
		{name: "score 0", rank: 1, d2: 0.5, score: 0, want: 1.5, reads: 1},
		{name: "score clamped above", rank: 2, d2: 0.25, score: 3, want: 0.25, reads: 1},
		{name: "score clamped below", rank: 2, d2: 0.25, score: -7, want: 2.25, reads: 1},
		{name: "past the depth", rank: 3, d2: 0.25, score: 1, want: 2.25},
		{name: "read error", rank: 0, d2: 0.25, readErr: errRead, reads: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Rerank{Depth: 3, Weight: 0.5, Score: func(string) float64 { return tc.score }}
			reads := 0
			got, err := r.Distance(tc.rank, tc.d2, func() (string, error) { reads++; return "x", tc.readErr })
			if !errors.Is(err, tc.readErr) || err == nil && got != tc.want || reads != tc.reads {
				t.Errorf("Distance = %v, %v after %d reads; want %v, %v after %d", got, err, reads, tc.want, tc.readErr, tc.reads)
			}
		})
	}
	for _, r := range []*Rerank{nil, {Depth: 0, Weight: 1, Score: func(string) float64 { return 0 }}, {Depth: 5, Weight: 0, Score: func(string) float64 { return 0 }}, {Depth: 5, Weight: 1}} {
		if r.Active() {
			t.Errorf("%+v is active", r)
		}
	}
}
