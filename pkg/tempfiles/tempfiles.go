// Package tempfiles names the temporary files and directories of a docrepo
// process after its process id, and removes those a process that is gone
// left behind: a process killed while it extracts or reads a scan leaves
// its downloads and rendered pages, and nothing else would ever remove
// them.
package tempfiles

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Pattern is the os.CreateTemp and os.MkdirTemp pattern of prefix for this
// process: prefix, the process id, a dash, and the random part.
func Pattern(prefix string) string {
	return fmt.Sprintf("%s%d-*", prefix, os.Getpid())
}

// legacyAge is how old an entry named after prefix without a process id
// (made before names carried one) must be to be removed.
const legacyAge = time.Hour

// Sweep removes the entries of dir ("" means os.TempDir()) named
// prefix<pid>-… whose process is gone, or is this process (a container
// restarted with the same process id; call Sweep before making any), and
// entries named prefix… without a process id that are older than an hour.
// It returns the paths removed; an entry that cannot be removed is
// skipped, and only a directory that cannot be read is an error.
func Sweep(dir, prefix string) ([]string, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("tempfiles: read %s: %w", dir, err)
	}
	var removed []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		if !stale(rest, e) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if err := os.RemoveAll(path); err == nil {
			removed = append(removed, path)
		}
	}
	return removed, nil
}

// stale decides on an entry from the part of its name after the prefix.
func stale(rest string, e os.DirEntry) bool {
	digits, _, tagged := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(digits)
	if tagged && err == nil && pid > 0 {
		return pid == os.Getpid() || !alive(pid)
	}
	info, err := e.Info()
	return err == nil && time.Since(info.ModTime()) > legacyAge
}
