package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/launcher"
)

var (
	ctlOnce sync.Once
	ctlPath string
	ctlErr  error
)

// docrepoctl builds the docrepoctl binary once per test run.
func docrepoctl(t *testing.T) string {
	t.Helper()
	ctlOnce.Do(func() {
		root, err := launcher.RepoRoot(".")
		if err != nil {
			ctlErr = err
			return
		}
		dir, err := os.MkdirTemp("", "docrepo-e2e-ctl-")
		if err != nil {
			ctlErr = err
			return
		}
		bins, err := launcher.Build(context.Background(), root, dir, "docrepoctl")
		ctlPath, ctlErr = bins["docrepoctl"], err
	})
	if ctlErr != nil {
		t.Fatalf("building docrepoctl: %v", ctlErr)
	}
	return ctlPath
}

// writeTree creates files (path -> content) under a new directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// importCmd is `docrepoctl import` as the user, into their folder.
func (u *docUser) importCmd(t *testing.T, dir, state string, extra ...string) *exec.Cmd {
	args := append([]string{"import", "-url", stk.baseURL, "-folder-id", strconv.FormatInt(u.folder.FolderID, 10), "-state", state}, extra...)
	cmd := exec.Command(docrepoctl(t), append(args, dir)...)
	cmd.Env = append(os.Environ(), "DOCREPO_TOKEN="+u.token)
	return cmd
}

// userDocuments lists the user's documents as "folder path/description".
func userDocuments(t *testing.T, username string) []string {
	t.Helper()
	rows, err := stk.pool.Query(context.Background(), `SELECT coalesce(f.full_path, '-') || ' ' || d.description
		FROM document.documents d
		LEFT JOIN document.document_folders df ON df.doc_id = d.id
		LEFT JOIN folder.folders f ON f.id = df.folder_id
		WHERE d.entry_person = $1 ORDER BY 1`, username)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// docrepoctl import turns a tree into folders and documents with the
// side-files' fields, reports what it refused, and a second run (with or
// without its state file) creates nothing twice.
func TestImportDirectoryTree(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	dir := writeTree(t, map[string]string{
		"top.txt":                                "top level text",
		"Contracts/alpha.txt":                    "alpha contract",
		"Contracts/2024/beta.txt":                "beta contract",
		"Contracts/2024/beta.txt" + ".meta.json": `{"description": "Beta supply contract", "date": "2024-03-01"}`,
		"Contracts/bad.txt":                      "bad side-file",
		"Contracts/bad.txt.meta.json":            `{"colour": "red"}`,
		".git/config":                            "not imported",
		"Contracts/.DS_Store":                    "not imported",
	})
	state := filepath.Join(t.TempDir(), "import.state")
	out, err := u.importCmd(t, dir, state).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "import: 1 file(s) failed") ||
		!strings.Contains(string(out), `Contracts/bad.txt: bad.txt.meta.json: unknown field "colour"`) {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	root := u.folder.FullPath
	want := []string{ // full_path separates folders with "->"
		root + " top.txt",
		root + "->Contracts alpha.txt",
		root + "->Contracts->2024 Beta supply contract",
	}
	if got := userDocuments(t, u.username); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("documents after the import:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(string(out), "uploaded now:        3") {
		t.Fatalf("summary does not count 3 uploads:\n%s", out)
	}

	// Again with the state file: nothing is sent again.
	out, _ = u.importCmd(t, dir, state).CombinedOutput()
	if !strings.Contains(string(out), "done in an earlier run: 3") || !strings.Contains(string(out), "uploaded now:        0") {
		t.Fatalf("second run:\n%s", out)
	}
	// Again without it (lost, or a crash before it was written): every
	// file is sent again and none is created twice, nor any folder.
	out, _ = u.importCmd(t, dir, filepath.Join(t.TempDir(), "fresh.state")).CombinedOutput()
	if !strings.Contains(string(out), "uploaded now:        3") {
		t.Fatalf("third run:\n%s", out)
	}
	if got := userDocuments(t, u.username); len(got) != 3 {
		t.Fatalf("after re-running without the state file: %d documents, want 3:\n%s", len(got), strings.Join(got, "\n"))
	}
	var folders int
	if err := stk.pool.QueryRow(context.Background(), `SELECT count(*) FROM folder.folders WHERE full_path LIKE $1 || '->%'`, root).Scan(&folders); err != nil {
		t.Fatal(err)
	}
	if folders != 2 {
		t.Fatalf("%d folders under the target, want 2 (Contracts, Contracts/2024)", folders)
	}
}

// An import killed with SIGKILL in the middle and run again ends with
// exactly one document per file.
func TestImportResumesAfterKill(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	const n = 300
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("d%d/f%03d.txt", i%3, i)] = fmt.Sprintf("file %d of the killed import", i)
	}
	dir := writeTree(t, files)
	state := filepath.Join(t.TempDir(), "import.state")

	cmd := u.importCmd(t, dir, state, "-concurrency", "4")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill once a good part is done (the state file's lines are flushed
	// every 200 ms), so the kill lands in the middle.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if lines := countLines(state); lines >= n/4 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the import made no progress in 60 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	if got := len(userDocuments(t, u.username)); got >= n {
		t.Fatalf("the import finished (%d documents) before the kill; the test needs a kill in the middle", got)
	}
	out, err := u.importCmd(t, dir, state, "-concurrency", "4").CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	got := userDocuments(t, u.username)
	seen := map[string]int{}
	for _, d := range got {
		seen[d]++
	}
	if len(got) != n || len(seen) != n {
		t.Fatalf("after the resume: %d documents, %d distinct, want %d of each", len(got), len(seen), n)
	}
}

func countLines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	s := bufio.NewScanner(f)
	for s.Scan() {
		n++
	}
	return n
}
