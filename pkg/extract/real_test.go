package extract

import (
	"archive/zip"
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/docrepo/docrepo/pkg/testenv"
)

// findDocuments returns the documents folder, looking in every ancestor of
// the working directory, or skips the test naming the folder.
func findDocuments(t *testing.T) string {
	t.Helper()
	return testenv.DataDir(t, "documents", "DOCREPO_DOCUMENTS_DIR", "MANIFEST.tsv")
}

type manifestEntry struct {
	file    string
	pages   int // 0 when not a PDF
	phrases []string
}

func readManifest(t *testing.T, dir string) []manifestEntry {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "MANIFEST.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []manifestEntry
	sc := bufio.NewScanner(f)
	for line := 0; sc.Scan(); line++ {
		if line == 0 {
			continue // header
		}
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 2 || cols[0] == "" {
			continue
		}
		e := manifestEntry{file: cols[0]}
		if cols[1] != "" {
			if e.pages, err = strconv.Atoi(cols[1]); err != nil {
				t.Fatalf("MANIFEST.tsv line %d: pages %q: %v", line+1, cols[1], err)
			}
		}
		if len(cols) > 2 {
			for _, p := range strings.Split(cols[2], "|") {
				if p = strings.TrimSpace(p); p != "" {
					e.phrases = append(e.phrases, p)
				}
			}
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("MANIFEST.tsv lists no files")
	}
	return out
}

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

// TestRealDocuments checks every file of the manifest: listed phrases are
// found, PDFs have the listed page count, everything extracts without error.
func TestRealDocuments(t *testing.T) {
	dir := findDocuments(t)
	var passed, total int
	for _, e := range readManifest(t, dir) {
		t.Run(e.file, func(t *testing.T) {
			res, err := extractFile(t, filepath.Join(dir, e.file))
			if err != nil {
				t.Fatalf("Extract: %v", err)
			}
			if e.pages > 0 && res.Pages != e.pages {
				t.Errorf("Pages = %d, want %d", res.Pages, e.pages)
			}
			for _, p := range e.phrases {
				total++
				if containsPhrase(res.Text, p) {
					passed++
				} else {
					t.Errorf("phrase %q not found in the %d bytes of text", p, len(res.Text))
				}
			}
			switch {
			case e.file == "blank-scan.pdf":
				if res.Text != "" {
					t.Errorf("text of a scan without text layer = %q, want empty", res.Text)
				}
			case strings.TrimSpace(res.Text) == "" && hasText(t, filepath.Join(dir, e.file)):
				t.Errorf("no text extracted")
			}
		})
	}
	t.Logf("manifest phrases found: %d/%d", passed, total)
}

// TestRealPageCount checks PageCount on every PDF of the manifest.
func TestRealPageCount(t *testing.T) {
	dir := findDocuments(t)
	for _, e := range readManifest(t, dir) {
		if e.pages == 0 {
			continue
		}
		t.Run(e.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join(dir, e.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, _ := f.Stat()
			n, err := PageCount(f, st.Size())
			if err != nil {
				t.Fatalf("PageCount: %v", err)
			}
			if n != e.pages {
				t.Errorf("PageCount = %d, want %d", n, e.pages)
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
