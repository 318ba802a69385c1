package searchsvc

import (
	"context"
	"slices"
	"testing"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// filesbelongto concerns only the folders the caller can see: a hidden
// folder's id is never shown, and a filter on it behaves as for a folder
// that does not exist (the service's test caller sees folders 5 and 6).
func TestFilesBelongToOnlyVisibleFolders(t *testing.T) {
	docs := []engine.Document{
		{ID: 1, Rev: 1, GroupIDs: []int64{10}, FolderIDs: []int64{5, 7}, Description: ptr("in a visible and a hidden folder")},
		{ID: 2, Rev: 1, GroupIDs: []int64{10}, FolderIDs: []int64{7}, Description: ptr("in a hidden folder only")},
		{ID: 3, Rev: 1, GroupIDs: []int64{10}, FolderIDs: []int64{6}, Description: ptr("in a visible folder")},
		{ID: 4, Rev: 1, GroupIDs: []int64{10}, Description: ptr("in no folder")},
	}
	s := newTestService(t, 0, nil, docs...)
	tests := []struct {
		name  string
		where string
		want  []int64
	}{
		{name: "eq a visible folder", where: `{"eq":{"field":"filesbelongto","value":5}}`, want: []int64{1}},
		{name: "eq a hidden folder matches nothing", where: `{"eq":{"field":"filesbelongto","value":7}}`, want: nil},
		{name: "ne a hidden folder matches everything", where: `{"ne":{"field":"filesbelongto","value":7}}`, want: []int64{1, 2, 3, 4}},
		{name: "in keeps the visible ids", where: `{"in":{"field":"filesbelongto","value":[6,7]}}`, want: []int64{3}},
		{name: "nin of hidden ids only matches everything", where: `{"nin":{"field":"filesbelongto","value":[7,8]}}`, want: []int64{1, 2, 3, 4}},
		{name: "a range counts visible folders only", where: `{"gt":{"field":"filesbelongto","value":0}}`, want: []int64{1, 3}},
		{name: "a range over hidden ids only", where: `{"gte":{"field":"filesbelongto","value":7}}`, want: nil},
		{name: "not of a hidden folder", where: `{"not":{"eq":{"field":"filesbelongto","value":7}}}`, want: []int64{1, 2, 3, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := s.Search(userCtx(10), request(t, `{"where":`+tt.where+`,"select":["id","filesbelongto"],"sort":[{"field":"id"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, r := range resp.GetResults() {
				id := int64(r.GetFields()["id"].GetNumberValue())
				got = append(got, id)
				for _, v := range r.GetFields()["filesbelongto"].GetListValue().GetValues() {
					if f := int64(v.GetNumberValue()); f == 7 {
						t.Errorf("document %d shows hidden folder 7", id)
					}
				}
			}
			if !slices.Equal(got, tt.want) || resp.GetTotal() != int64(len(tt.want)) {
				t.Fatalf("ids = %v (total %d), want %v", got, resp.GetTotal(), tt.want)
			}
		})
	}
	// An internal caller sees every folder.
	resp, err := s.Search(auth.WithPrincipal(context.Background(), &auth.Principal{Scopes: []string{auth.ScopeInternal}}), request(t, `{"where":{"eq":{"field":"filesbelongto","value":7}},"select":["filesbelongto"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetTotal() != 2 {
		t.Fatalf("an unrestricted caller finds %d documents in folder 7, want 2", resp.GetTotal())
	}
}
