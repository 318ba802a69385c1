package documentsvc

import (
	"slices"
	"testing"

	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
)

// TestInlineWithin: files come inline in the order asked for, each id
// once, while their sizes fit the response's budget; a file that does not
// fit is downloaded, and smaller ones after it may still fit.
func TestInlineWithin(t *testing.T) {
	docs := map[int64]*documentv1.IndexDocument{}
	keys := map[int64]string{}
	for id, size := range map[int64]int64{1: 400, 2: 300, 3: 500, 4: 100, 5: 0} {
		docs[id] = &documentv1.IndexDocument{File: &documentv1.IndexFile{ImageSize: size}}
		keys[id] = "k"
	}
	docs[6] = &documentv1.IndexDocument{File: &documentv1.IndexFile{ImageSize: 10}} // over inline_max_bytes: no key
	tests := []struct {
		name  string
		ids   []int64
		total int64
		want  []int64
	}{
		{name: "all fit", ids: []int64{1, 2, 3, 4, 5, 6}, total: 2000, want: []int64{1, 2, 3, 4, 5}},
		{name: "budget runs out", ids: []int64{1, 2, 3, 4, 5}, total: 800, want: []int64{1, 2, 4, 5}},
		{name: "order of the request", ids: []int64{3, 1, 2}, total: 800, want: []int64{3, 2}},
		{name: "an id asked twice counts once", ids: []int64{4, 4, 4}, total: 150, want: []int64{4}},
		{name: "nothing fits", ids: []int64{1, 3}, total: 100, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := inlineWithin(tt.ids, docs, keys, tt.total); !slices.Equal(got, tt.want) {
				t.Fatalf("inlineWithin = %v, want %v", got, tt.want)
			}
		})
	}
}
