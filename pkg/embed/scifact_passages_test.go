package embed

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/docrepo/docrepo/pkg/embed/passage"
	"github.com/docrepo/docrepo/pkg/embed/wordpiece"
)

// miniLMTokenizer finds all-MiniLM-L6-v2's tokenizer.json in the module
// cache (github.com/clems4ever/all-minilm-l6-v2-go carries it).
func miniLMTokenizer(t testing.TB) *wordpiece.Tokenizer {
	t.Helper()
	const rel = "github.com/clems4ever/all-minilm-l6-v2-go@v0.0.9/all_minilm_l6_v2/tokenizer.json"
	for _, root := range []string{os.Getenv("GOMODCACHE"), filepath.Join(os.Getenv("HOME"), "go", "pkg", "mod"), "/root/go/pkg/mod"} {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if root == "" || err != nil {
			continue
		}
		tok, err := wordpiece.ParseJSON(b)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	t.Skip("all-MiniLM-L6-v2 tokenizer.json not in the module cache (go mod download github.com/clems4ever/all-minilm-l6-v2-go@v0.0.9)")
	return nil
}

// TestSciFactPassages tokenizes the SciFact corpus with the real
// all-MiniLM-L6-v2 tokenizer and reports how many passages the local
// embedder would make of it, the figure that sizes indexing time.
func TestSciFactPassages(t *testing.T) {
	tok := miniLMTokenizer(t)
	sf := loadSciFact(t)
	for _, maxTokens := range []int{256, 512} { // all-MiniLM's max_seq_length; bge and e5
		window := maxTokens - 2
		var tokens, passages, longest int
		lengths := make([]int, 0, len(sf.docs))
		for _, d := range sf.docs {
			toks := tok.Tokenize(d)
			ws := passage.Split(toks, window, window/4)
			tokens += len(toks)
			passages += len(ws)
			longest = max(longest, len(toks))
			lengths = append(lengths, len(toks))
		}
		slices.Sort(lengths)
		t.Logf("max %d tokens: %d abstracts, %.0f tokens each on average (median %d, longest %d), %d passages (%.2f each)",
			maxTokens, len(sf.docs), float64(tokens)/float64(len(sf.docs)), lengths[len(lengths)/2], longest, passages, float64(passages)/float64(len(sf.docs)))
		if passages < len(sf.docs) {
			t.Errorf("%d passages for %d documents", passages, len(sf.docs))
		}
	}
}
