package bleveengine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Generations let the embedded index be rebuilt without downtime: a full
// rebuild writes a new generation (a subdirectory gen-N of the index
// directory) while searches go on against the current one, and then
// switches to it. The file CURRENT names the generation in use; "." is an
// index made before generations existed, whose files are in the index
// directory itself. A rebuild that never finished leaves a generation
// CURRENT does not name, removed at the next start — except that
// OpenCurrentResumable keeps the newest one, so that a re-embedding killed
// mid-way can continue in it (ResumeGeneration) instead of starting over.

const currentFile = "CURRENT"

// OpenCurrent opens the index generation in use under root (creating a
// first one when root holds none) and returns it with its name.
func OpenCurrent(root string, opts Options) (*Engine, string, error) {
	e, name, unfinished, err := OpenCurrentResumable(root, opts)
	if err == nil && unfinished != "" {
		_ = RemoveGeneration(root, unfinished)
	}
	return e, name, err
}

// OpenCurrentResumable is OpenCurrent, but the newest generation a rebuild
// left unfinished (numbered above the one in use) is kept and its name
// returned (else ""); older unfinished ones are removed. The caller either
// continues it (ResumeGeneration) or removes it (RemoveGeneration).
func OpenCurrentResumable(root string, opts Options) (*Engine, string, string, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, "", "", fmt.Errorf("bleveengine: %w", err)
	}
	name, err := currentGeneration(root)
	if err != nil {
		return nil, "", "", err
	}
	if name == "" {
		if _, err := os.Stat(filepath.Join(root, "index_meta.json")); err == nil {
			name = "." // an index from before generations
		} else {
			name = "gen-1"
		}
		if err := CommitGeneration(root, name); err != nil {
			return nil, "", "", err
		}
	}
	unfinished := ""
	if n := lastGeneration(root); n > generationNumber(name) {
		unfinished = fmt.Sprintf("gen-%d", n)
	}
	removeAbandoned(root, name, unfinished)
	e, err := Open(filepath.Join(root, name), opts)
	if err != nil {
		return nil, "", "", err
	}
	return e, name, unfinished, nil
}

// ResumeGeneration opens the unfinished generation name (from
// OpenCurrentResumable) to go on writing it. It does not become current
// until CommitGeneration.
func ResumeGeneration(root, name string, opts Options) (*Engine, error) {
	if !isGeneration(name) {
		return nil, fmt.Errorf("bleveengine: %q is not a generation", name)
	}
	dir := filepath.Join(root, name)
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("bleveengine: %w", err)
	}
	return Open(dir, opts)
}

// generationNumber is N of gen-N, 0 for "." (and anything else).
func generationNumber(name string) int {
	n, ok := strings.CutPrefix(name, "gen-")
	if !ok {
		return 0
	}
	v, _ := strconv.Atoi(n)
	return v
}

// NewGeneration creates the next, empty generation under root and opens
// it. It does not become current until CommitGeneration.
func NewGeneration(root string, opts Options) (*Engine, string, error) {
	name := fmt.Sprintf("gen-%d", lastGeneration(root)+1)
	dir := filepath.Join(root, name)
	if err := os.RemoveAll(dir); err != nil {
		return nil, "", err
	}
	e, err := Open(dir, opts)
	if err != nil {
		return nil, "", err
	}
	return e, name, nil
}

// CommitGeneration makes name the generation in use: CURRENT is replaced
// atomically (written aside, then renamed over the old one).
func CommitGeneration(root, name string) error {
	tmp := filepath.Join(root, currentFile+".tmp")
	if err := os.WriteFile(tmp, []byte(name+"\n"), 0o644); err != nil {
		return fmt.Errorf("bleveengine: %w", err)
	}
	if f, err := os.Open(tmp); err == nil {
		_ = f.Sync()
		f.Close()
	}
	if err := os.Rename(tmp, filepath.Join(root, currentFile)); err != nil {
		return fmt.Errorf("bleveengine: %w", err)
	}
	if d, err := os.Open(root); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// RemoveGeneration deletes a generation that is no longer in use. For "."
// that is every file of root but the generations and CURRENT.
func RemoveGeneration(root, name string) error {
	if name != "." {
		return os.RemoveAll(filepath.Join(root, name))
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.Name() == currentFile || isGeneration(e.Name()) {
			continue
		}
		errs = append(errs, os.RemoveAll(filepath.Join(root, e.Name())))
	}
	return errors.Join(errs...)
}

func currentGeneration(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, currentFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("bleveengine: %w", err)
	}
	name := strings.TrimSpace(string(b))
	if name != "." && !isGeneration(name) {
		return "", fmt.Errorf("bleveengine: %s names %q, not a generation", filepath.Join(root, currentFile), name)
	}
	return name, nil
}

func isGeneration(name string) bool {
	n, ok := strings.CutPrefix(name, "gen-")
	if !ok {
		return false
	}
	_, err := strconv.Atoi(n)
	return err == nil
}

// lastGeneration is the highest N of the gen-N directories under root.
func lastGeneration(root string) int {
	entries, _ := os.ReadDir(root)
	last := 0
	for _, e := range entries {
		if n, ok := strings.CutPrefix(e.Name(), "gen-"); ok && e.IsDir() {
			if v, err := strconv.Atoi(n); err == nil && v > last {
				last = v
			}
		}
	}
	return last
}

// removeAbandoned deletes the generations a rebuild left unfinished, but
// keep.
func removeAbandoned(root, current, keep string) {
	entries, _ := os.ReadDir(root)
	var names []string
	for _, e := range entries {
		if e.IsDir() && isGeneration(e.Name()) && e.Name() != current && e.Name() != keep {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		_ = os.RemoveAll(filepath.Join(root, n))
	}
}
