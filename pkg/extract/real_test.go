package extract

import (
	"archive/zip"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/docrepo/docrepo/pkg/testenv"
)

// wordTokens lowercases s and splits it into runs of letters and digits,
// the way the search engine's phrase matching sees text.
func wordTokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// containsPhrase reports whether the tokens of phrase occur adjacent and in
// order in the tokens of text.
func containsPhrase(text, phrase string) bool {
	return strings.Contains(" "+strings.Join(wordTokens(text), " ")+" ", " "+strings.Join(wordTokens(phrase), " ")+" ")
}

func extractFile(t *testing.T, path string) (Result, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return Extract(context.Background(), f, st.Size(), "", filepath.Base(path), Options{})
}

// TestRealDocumentsExtractWithTheirPhrasesAndPageCounts checks every file of the manifest: listed phrases are
// found, PDFs have the listed page count, everything extracts without error.
func TestRealDocumentsExtractWithTheirPhrasesAndPageCounts(t *testing.T) {
	dir, docs := testenv.RealDocuments(t)
	var passed, total int
	for _, e := range docs {
		t.Run(e.File, func(t *testing.T) {
			res, err := extractFile(t, filepath.Join(dir, e.File))
			if err != nil {
				t.Fatalf("Extract: %v", err)
			}
			if e.Pages > 0 && res.Pages != e.Pages {
				t.Errorf("Pages = %d, want %d", res.Pages, e.Pages)
			}
			for _, p := range e.Phrases {
				total++
				if containsPhrase(res.Text, p) {
					passed++
				} else {
					t.Errorf("phrase %q not found in the %d bytes of text", p, len(res.Text))
				}
			}
			switch {
			case e.File == "blank-scan.pdf":
				if res.Text != "" {
					t.Errorf("text of a scan without text layer = %q, want empty", res.Text)
				}
			case strings.TrimSpace(res.Text) == "" && hasText(t, filepath.Join(dir, e.File)):
				t.Errorf("no text extracted")
			}
		})
	}
	t.Logf("manifest phrases found: %d/%d", passed, total)
}

// TestRealPageCount checks PageCount on every PDF of the manifest.
func TestRealPageCount(t *testing.T) {
	dir, docs := testenv.RealDocuments(t)
	for _, e := range docs {
		if e.Pages == 0 {
			continue
		}
		t.Run(e.File, func(t *testing.T) {
			f, err := os.Open(filepath.Join(dir, e.File))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, _ := f.Stat()
			n, err := PageCount(f, st.Size())
			if err != nil {
				t.Fatalf("PageCount: %v", err)
			}
			if n != e.Pages {
				t.Errorf("PageCount = %d, want %d", n, e.Pages)
			}
		})
	}
}

// wordRun matches a WordprocessingML text run with something visible in it.
var wordRun = regexp.MustCompile(`<w:t(?:\s[^>]*)?>[^<]*[^\s<]`)

// hasText is an independent oracle for "the document has text": PDFs other
// than the blank scan do; a DOCX does when one of its XML parts has a
// non-blank <w:t> run (some test documents are empty tables).
func hasText(t *testing.T, path string) bool {
	t.Helper()
	if !strings.HasSuffix(strings.ToLower(path), ".docx") {
		return true
	}
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, ".xml") {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if wordRun.Match(b) {
			return true
		}
	}
	return false
}
