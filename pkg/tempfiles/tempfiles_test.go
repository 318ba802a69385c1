package tempfiles

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestSweepRemovesWhatGoneProcessesLeft: entries of a process that is
// gone and this process's own (a restart under the same id) are removed;
// a live process's entries, young entries without a process id and other
// names stay.
func TestSweepRemovesWhatGoneProcessesLeft(t *testing.T) {
	dir := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skipf("no true program: %v", err)
	}
	old := time.Now().Add(-2 * time.Hour)
	tests := []struct {
		name    string
		dir     bool
		modTime time.Time
		removed bool
	}{
		{name: fmt.Sprintf("docrepo-ocr-%d-123", gone.Process.Pid), dir: true, removed: true},
		{name: fmt.Sprintf("docrepo-ocr-%d-456", os.Getpid()), dir: true, removed: true},
		{name: fmt.Sprintf("docrepo-ocr-%d-789", os.Getppid()), dir: true},
		{name: "docrepo-ocr-98765432", modTime: old, removed: true},
		{name: "docrepo-ocr-12345678"},
		{name: "other-file", modTime: old},
	}
	for _, tc := range tests {
		path := filepath.Join(dir, tc.name)
		var err error
		if tc.dir {
			err = os.MkdirAll(filepath.Join(path, "page"), 0o700)
		} else {
			err = os.WriteFile(path, []byte("x"), 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
		if !tc.modTime.IsZero() {
			if err := os.Chtimes(path, tc.modTime, tc.modTime); err != nil {
				t.Fatal(err)
			}
		}
	}
	removed, err := Sweep(dir, "docrepo-ocr-")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		path := filepath.Join(dir, tc.name)
		_, statErr := os.Stat(path)
		if gotRemoved := os.IsNotExist(statErr); gotRemoved != tc.removed || slices.Contains(removed, path) != tc.removed {
			t.Errorf("%s: removed %v (reported %v), want %v", tc.name, gotRemoved, slices.Contains(removed, path), tc.removed)
		}
	}
}

// TestPatternNamesThisProcess: names made from Pattern carry this
// process's id, so the next start of this process sweeps them.
func TestPatternNamesThisProcess(t *testing.T) {
	dir := t.TempDir()
	f, err := os.CreateTemp(dir, Pattern("docrepo-index-"))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	removed, err := Sweep(dir, "docrepo-index-")
	if err != nil || len(removed) != 1 || removed[0] != f.Name() {
		t.Fatalf("Sweep = %v, %v; want %s", removed, err, f.Name())
	}
}
