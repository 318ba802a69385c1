package walls

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
)

// A citation names a section of a page in docs/: "docs/api.md §4.8". It may
// be split over two comment lines ("docs/api.md\n// §4.8").
var citation = regexp.MustCompile(`docs/([a-z]+\.md)(?:\s|//|#)*§\s*([0-9]+(?:\.[0-9]+)*)`)

// heading is a numbered section heading: "## 4." or "### 4.8 ...".
var heading = regexp.MustCompile(`^#{2,4}\s+([0-9]+(?:\.[0-9]+)*)\.?\s`)

// Sections reads the numbered section headings of every page in docsDir:
// page name → set of section numbers.
func Sections(docsDir string) (map[string]map[string]bool, error) {
	pages, err := filepath.Glob(filepath.Join(docsDir, "*.md"))
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]bool{}
	for _, p := range pages {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		secs := map[string]bool{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if m := heading.FindStringSubmatch(sc.Text()); m != nil {
				secs[m[1]] = true
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
		out[filepath.Base(p)] = secs
	}
	return out, nil
}

// CheckCitations returns a line for every citation in text (named by where)
// of a page or section that does not exist.
func CheckCitations(where, text string, sections map[string]map[string]bool) []string {
	var out []string
	for _, m := range citation.FindAllStringSubmatch(text, -1) {
		page, sec := m[1], m[2]
		secs, ok := sections[page]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s cites docs/%s, which does not exist", where, page))
		case !secs[sec]:
			out = append(out, fmt.Sprintf("%s cites docs/%s §%s, which has no such section", where, page, sec))
		}
	}
	return out
}

// citingFiles are the files whose citations are checked: source, protobuf,
// configuration and documentation, outside generated code.
func citingFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			switch rel {
			case ".git", "bin", ".data", filepath.Join("pkg", "gen"), "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(p) {
		case ".go", ".proto", ".md", ".yaml", ".yml", ".sql", ".sh":
			files = append(files, rel)
		}
		if d.Name() == "Makefile" || d.Name() == "Dockerfile" {
			files = append(files, rel)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}
