package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// DataDir returns the shared benchmark/fixture folder ../shared/data/<name>
// beside the checkout (found by walking up from the working directory), or
// the folder named by the environment variable env when that is set. The
// files are public fixtures that are never copied into the repository; when
// the folder is absent (a user's fresh clone) the test is skipped with a
// message naming it — also under DOCREPO_TEST_STRICT, since absent fixtures
// are not a broken environment.
func DataDir(t testing.TB, name, env, probe string) string {
	t.Helper()
	if dir := os.Getenv(env); dir != "" {
		return dir
	}
	if dir, ok := FindDataDir(name, probe); ok {
		return dir
	}
	wd, _ := os.Getwd()
	t.Skipf("skipping: fixture folder shared/data/%s (with %s) not found in any parent of %s; set %s to point at it", name, probe, wd, env)
	return ""
}

// FindDataDir looks for shared/data/<name>/<probe> in the working directory
// and its parents.
func FindDataDir(name, probe string) (string, bool) {
	wd, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		candidate := filepath.Join(dir, "shared", "data", name)
		if _, err := os.Stat(filepath.Join(candidate, probe)); err == nil {
			return candidate, true
		}
		if filepath.Dir(dir) == dir {
			return "", false
		}
	}
}

// RealDocument is one entry of shared/data/documents/MANIFEST.tsv: a
// real-world PDF or DOCX file, its page count as poppler's pdfinfo reports
// it (0 for DOCX), and phrases that occur in its text with the words
// adjacent and in order.
type RealDocument struct {
	File    string
	Pages   int
	Phrases []string
}

// RealDocuments returns the real-world documents folder and its manifest,
// skipping the test (see DataDir) when the folder is absent.
// DOCREPO_DOCUMENTS_DIR overrides the location.
func RealDocuments(t testing.TB) (dir string, docs []RealDocument) {
	t.Helper()
	dir = DataDir(t, "documents", "DOCREPO_DOCUMENTS_DIR", "MANIFEST.tsv")
	docs, err := ReadManifest(filepath.Join(dir, "MANIFEST.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, docs
}

// RealDocumentsPresent reports whether RealDocuments would find the folder.
func RealDocumentsPresent() bool {
	if os.Getenv("DOCREPO_DOCUMENTS_DIR") != "" {
		return true
	}
	_, ok := FindDataDir("documents", "MANIFEST.tsv")
	return ok
}

// ReadManifest parses a MANIFEST.tsv: a header line, then
// file<TAB>pages<TAB>phrase | phrase | ...
func ReadManifest(path string) ([]RealDocument, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []RealDocument
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if i == 0 {
			continue // header
		}
		cols := strings.Split(strings.TrimRight(line, "\r"), "\t")
		if len(cols) < 2 || cols[0] == "" {
			continue
		}
		d := RealDocument{File: cols[0]}
		if cols[1] != "" {
			if d.Pages, err = strconv.Atoi(cols[1]); err != nil {
				return nil, fmt.Errorf("%s line %d: pages %q: %w", path, i+1, cols[1], err)
			}
		}
		if len(cols) > 2 {
			for _, p := range strings.Split(cols[2], "|") {
				if p = strings.TrimSpace(p); p != "" {
					d.Phrases = append(d.Phrases, p)
				}
			}
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s lists no files", path)
	}
	return out, nil
}
