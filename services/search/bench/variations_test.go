package main

import (
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/search/scifact"
)

// TestSciTextsVary: the first round is the abstracts themselves, later
// rounds distinct variations that keep the title and every sentence.
func TestSciTextsVary(t *testing.T) {
	docs := []scifact.Doc{
		{ID: "1", Title: "Aspirin and the heart.", Text: "Aspirin lowers risk. It thins the blood. Trials agree."},
		{ID: "2", Title: "Sleep in mice.", Text: "Mice sleep by day. They wake at night."},
	}
	s := newSciTexts(docs)
	tests := []struct {
		i         int
		wantName  string
		wantTitle string
		wantStart string
		wantHas   []string
	}{
		{i: 0, wantName: "1.txt", wantTitle: "Aspirin and the heart.", wantStart: "Aspirin and the heart. Aspirin lowers risk."},
		{i: 1, wantName: "2.txt", wantTitle: "Sleep in mice.", wantStart: "Sleep in mice. Mice sleep"},
		{i: 2, wantName: "1-v1.txt", wantTitle: "Aspirin and the heart.", wantStart: "Aspirin and the heart. It thins the blood.",
			wantHas: []string{"Aspirin lowers risk.", "Trials agree."}},
		{i: 4, wantName: "1-v2.txt", wantTitle: "Aspirin and the heart.", wantStart: "Aspirin and the heart. Trials agree.",
			wantHas: []string{"Aspirin lowers risk.", "It thins the blood."}},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		name, text, title := s.doc(tt.i)
		if name != tt.wantName || title != tt.wantTitle || !strings.HasPrefix(text, tt.wantStart) || seen[text] {
			t.Errorf("doc(%d) = %q, %q, %q; want %q, %q, starting %q, new", tt.i, name, text, title, tt.wantName, tt.wantTitle, tt.wantStart)
		}
		for _, h := range tt.wantHas {
			if !strings.Contains(text, h) {
				t.Errorf("doc(%d) = %q lacks %q", tt.i, text, h)
			}
		}
		seen[text] = true
	}
}
