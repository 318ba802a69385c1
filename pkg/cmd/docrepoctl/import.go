package main

// docrepoctl import: a directory tree of existing files into documents and
// folders, through the public REST API as the key's user (every acceptance
// rule, visibility and event applies as to any upload).
//
//	docrepoctl import [-url URL] [-token TOKEN] [-folder-id N] [-concurrency N] [-state FILE] DIR
//
// Each directory under DIR becomes a folder of the same name under the
// folder before it (-folder-id is the parent of DIR's own entries; 0: the
// root level); each file becomes a document in its directory's folder. A
// side-file NAME.meta.json next to a file NAME (report.pdf.meta.json beside
// report.pdf) holds its upload fields as a JSON
// object (description, doc_type, doc_status, date, from_entity, to_entity,
// reference_number, account_number, rev_number, subdoctype,
// doc_number_prefix, privileged); side-files and dot-files are not
// imported, and a side-file naming no file stops the import before
// anything is sent.
//
// Resuming: run the same command again. Every upload carries an
// Idempotency-Key derived from the target folder, the file's path under DIR,
// its size and modification time, so a file that was uploaded before the
// crash, even one whose answer was lost, is not created twice; the state
// file (default: DIR's name and a hash of its absolute path, in the working
// directory) lists the files already done so that their bytes are not sent
// again. Folders are looked up by name before they are created. A file the
// API refuses (a bad side-file value, a 413) is reported in the summary
// and the import goes on; a refused key (401/403) stops it.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docrepo/docrepo/pkg/client"
)

// metaSuffix names a file's metadata side-file.
const metaSuffix = ".meta.json"

// importFields are the upload form fields a side-file may set.
var importFields = map[string]bool{
	"description": true, "doc_type": true, "doc_status": true, "date": true, "from_entity": true, "to_entity": true,
	"reference_number": true, "account_number": true, "rev_number": true, "subdoctype": true,
	"doc_number_prefix": true, "privileged": true,
}

func importCmd(ctx context.Context, e deployEnv) error {
	var (
		baseURL, token, statePath string
		parent                    int64
		concurrency               int
	)
	pos, err := parseArgs("import", e.args, func(fs *flag.FlagSet) {
		fs.StringVar(&baseURL, "url", e.apiURL, "gateway base URL (env DOCREPO_URL)")
		fs.StringVar(&token, "token", e.apiToken, "API key with documents_read and documents_write (env DOCREPO_TOKEN)")
		fs.Int64Var(&parent, "folder-id", 0, "folder to import into (0: the root level)")
		fs.IntVar(&concurrency, "concurrency", 8, "parallel uploads")
		fs.StringVar(&statePath, "state", "", "state file of a resumable import (default: in the working directory, named after DIR)")
	})
	if err != nil {
		return err
	}
	if err := exactly("import", pos, 1); err != nil {
		return err
	}
	if baseURL == "" || token == "" {
		return errors.New("import: -url (DOCREPO_URL) and -token (DOCREPO_TOKEN) are required")
	}
	if concurrency < 1 || concurrency > 64 {
		return errors.New("import: -concurrency must be 1 to 64")
	}
	root, err := filepath.Abs(pos[0])
	if err != nil {
		return err
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return fmt.Errorf("import: %s is not a directory", pos[0])
	}
	if statePath == "" {
		sum := sha256.Sum256([]byte(root + "\x00" + strconv.FormatInt(parent, 10)))
		statePath = fmt.Sprintf(".docrepo-import-%s-%s.state", filepath.Base(root), hex.EncodeToString(sum[:4]))
	}
	// Uploads are retried with their key after what may pass on retry
	// (5xx, 429, network), about 6 s in all.
	api, err := client.New(baseURL, token, client.Options{HTTPClient: &http.Client{Timeout: 10 * time.Minute}, Retry: client.Retry{
		Attempts: 6, Backoff: 200 * time.Millisecond, MaxBackoff: 3200 * time.Millisecond, MaxWait: 30 * time.Second,
		Statuses: []int{429, 500, 502, 503, 504},
	}})
	if err != nil {
		return fmt.Errorf("import: -url: %w", err)
	}
	im := &importer{
		api:    api,
		root:   root,
		parent: parent,
		out:    e.stdout,
		status: e.stderr,
	}
	return im.run(ctx, statePath, concurrency)
}

// importFile is one file to import.
type importFile struct {
	rel     string // slash-separated path under the root
	dir     string // its directory's rel ("" for the root)
	size    int64
	modTime time.Time
}

type importer struct {
	api    *client.Client
	root   string
	parent int64
	out    io.Writer
	status io.Writer

	folders map[string]int64 // rel dir -> folder id

	done, uploaded, failed, skipped atomic.Int64
	bytesSent                       atomic.Int64
	failures                        []string
	mu                              sync.Mutex
}

func (im *importer) run(ctx context.Context, statePath string, concurrency int) error {
	start := time.Now()
	files, dirs, err := im.walk()
	if err != nil {
		return err
	}
	if orphans := im.orphanSideFiles(files); len(orphans) > 0 {
		return fmt.Errorf("import: side-files that name no file (a side-file is the file's whole name + %s, e.g. report.pdf%s), nothing imported:\n  %s",
			metaSuffix, metaSuffix, strings.Join(orphans, "\n  "))
	}
	state, err := openImportState(statePath)
	if err != nil {
		return err
	}
	defer state.close()
	// Folders first, parents before children, one at a time: looking a
	// folder up by name before creating it is what makes a resumed run
	// reuse the folders of the first.
	im.folders = map[string]int64{"": im.parent}
	for _, d := range dirs {
		id, err := im.ensureFolder(ctx, im.folders[parentRel(d)], pathBase(d))
		if err != nil {
			return fmt.Errorf("import: folder %s: %w", d, err)
		}
		im.folders[d] = id
	}
	todo := make(chan importFile)
	stopProgress := im.progress(len(files), start)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var fatal error
	var fatalOnce sync.Once
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range todo {
				docID, err := im.importOne(ctx, f)
				switch {
				case err == nil:
					im.uploaded.Add(1)
					if err := state.record(f.rel, docID); err != nil {
						fatalOnce.Do(func() { fatal = err; cancel() })
					}
				case isFatal(err):
					fatalOnce.Do(func() { fatal = err; cancel() })
				case ctx.Err() == nil:
					im.failed.Add(1)
					im.mu.Lock()
					im.failures = append(im.failures, f.rel+": "+err.Error())
					im.mu.Unlock()
				}
				im.done.Add(1)
			}
		}()
	}
feed:
	for _, f := range files {
		if state.has(f.rel) {
			im.skipped.Add(1)
			im.done.Add(1)
			continue
		}
		select {
		case todo <- f:
		case <-ctx.Done():
			break feed
		}
	}
	close(todo)
	wg.Wait()
	stopProgress()
	elapsed := time.Since(start)
	fmt.Fprintf(im.out, "imported %s: %d files, %d folders in %v\n", im.root, len(files), len(dirs), elapsed.Round(time.Millisecond))
	fmt.Fprintf(im.out, "  uploaded now:        %d (%.0f documents/s, %.1f MB/s)\n", im.uploaded.Load(),
		float64(im.uploaded.Load())/elapsed.Seconds(), float64(im.bytesSent.Load())/1e6/elapsed.Seconds())
	fmt.Fprintf(im.out, "  done in an earlier run: %d\n", im.skipped.Load())
	fmt.Fprintf(im.out, "  failed:              %d\n", im.failed.Load())
	sort.Strings(im.failures)
	for i, f := range im.failures {
		if i == 20 {
			fmt.Fprintf(im.out, "    ... and %d more\n", len(im.failures)-20)
			break
		}
		fmt.Fprintf(im.out, "    %s\n", f)
	}
	fmt.Fprintf(im.out, "  state file:          %s (run the same command again to retry or resume)\n", statePath)
	if fatal != nil {
		return fmt.Errorf("import stopped: %w", fatal)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if im.failed.Load() > 0 {
		return fmt.Errorf("import: %d file(s) failed", im.failed.Load())
	}
	return nil
}

// walk lists the files and directories under the root in a stable order
// (directories before their contents).
func (im *importer) walk() ([]importFile, []string, error) {
	var files []importFile
	var dirs []string
	err := filepath.WalkDir(im.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == im.root {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(im.root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			dirs = append(dirs, rel)
		case d.Type().IsRegular() && !strings.HasSuffix(d.Name(), metaSuffix):
			info, err := d.Info()
			if err != nil {
				return err
			}
			files = append(files, importFile{rel: rel, dir: parentRel(rel), size: info.Size(), modTime: info.ModTime()})
		}
		return nil
	})
	return files, dirs, err
}

// orphanSideFiles lists the side-files under the root whose file is not
// among files (report.meta.json beside report.pdf): their fields would
// silently not be applied, and the file imported without them.
func (im *importer) orphanSideFiles(files []importFile) []string {
	have := make(map[string]bool, len(files))
	for _, f := range files {
		have[f.rel] = true
	}
	var orphans []string
	_ = filepath.WalkDir(im.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == im.root {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), metaSuffix) {
			if rel, err := filepath.Rel(im.root, path); err == nil && !have[strings.TrimSuffix(filepath.ToSlash(rel), metaSuffix)] {
				orphans = append(orphans, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	return orphans
}

func parentRel(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return ""
}

func pathBase(rel string) string { return rel[strings.LastIndexByte(rel, '/')+1:] }

// key is f's Idempotency-Key: the same file imported into the same folder
// again (a resumed run) gets the same key; an edited file gets another.
func (im *importer) key(f importFile) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s\x00%d\x00%d", im.parent, f.rel, f.size, f.modTime.UnixNano())))
	return "import:" + hex.EncodeToString(sum[:16])
}

// importOne uploads one file with its key; the client retries what may
// pass on retry (5xx, 429, network) with the same key.
func (im *importer) importOne(ctx context.Context, f importFile) (int64, error) {
	fields := map[string]string{}
	if data, err := os.ReadFile(filepath.Join(im.root, filepath.FromSlash(f.rel)) + metaSuffix); err == nil {
		var meta map[string]any
		if err := json.Unmarshal(data, &meta); err != nil {
			return 0, fmt.Errorf("%s%s: %v", pathBase(f.rel), metaSuffix, err)
		}
		for k, v := range meta {
			if !importFields[k] {
				return 0, fmt.Errorf("%s%s: unknown field %q", pathBase(f.rel), metaSuffix, k)
			}
			switch v := v.(type) {
			case string:
				fields[k] = v
			case bool:
				fields[k] = strconv.FormatBool(v)
			default:
				return 0, fmt.Errorf("%s%s: field %q must be a string", pathBase(f.rel), metaSuffix, k)
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	file, err := os.Open(filepath.Join(im.root, filepath.FromSlash(f.rel)))
	if err != nil {
		return 0, err
	}
	defer file.Close()
	res, err := im.api.Upload(ctx, client.Upload{FolderID: im.folders[f.dir], File: file, Filename: pathBase(f.rel),
		Metadata: client.Metadata{Extra: fields}, IdempotencyKey: im.key(f)})
	if err != nil {
		return 0, err
	}
	im.bytesSent.Add(f.size)
	return res.DocID, nil
}

// ensureFolder returns the id of parent's child folder name, creating it
// when there is none.
func (im *importer) ensureFolder(ctx context.Context, parent int64, name string) (int64, error) {
	for offset := 0; ; offset += 100 {
		page, err := im.api.ListFolders(ctx, client.FolderQuery{ParentID: &parent, Q: name, Limit: 100, Offset: offset})
		if err != nil {
			return 0, err
		}
		for _, f := range page {
			if f.Name == name {
				return f.FolderID, nil
			}
		}
		if len(page) < 100 {
			break
		}
	}
	created, err := im.api.CreateFolder(ctx, name, parent)
	if err != nil {
		return 0, err
	}
	return created.FolderID, nil
}

// progress prints a status line every second until the returned stop.
func (im *importer) progress(total int, start time.Time) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprintln(im.status)
				return
			case <-t.C:
			}
			n := im.done.Load()
			el := time.Since(start).Seconds()
			rate := float64(im.uploaded.Load()) / el
			eta := "?"
			if rate > 0 {
				eta = (time.Duration(float64(int64(total)-n)/rate) * time.Second).Round(time.Second).String()
			}
			width := 30
			filled := 0
			if total > 0 {
				filled = int(n) * width / total
			}
			fmt.Fprintf(im.status, "\r[%s%s] %d/%d files  %.0f docs/s  %d failed  ETA %s   ",
				strings.Repeat("#", filled), strings.Repeat(".", width-filled), n, total, rate, im.failed.Load(), eta)
		}
	}()
	return func() { close(done); wg.Wait() }
}

// importState is the append-only list of files done: "rel\tdoc_id" lines.
type importState struct {
	f    *os.File
	w    *bufio.Writer
	mu   sync.Mutex
	seen map[string]bool
	last time.Time
}

func openImportState(path string) (*importState, error) {
	s := &importState{seen: map[string]bool{}}
	if data, err := os.ReadFile(path); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			// A torn last line (a crash mid-write) is ignored: that file
			// is uploaded again, and its key makes that a no-op.
			if rel, id, ok := strings.Cut(line, "\t"); ok && id != "" {
				if _, err := strconv.ParseInt(id, 10, 64); err == nil {
					s.seen[rel] = true
				}
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	s.f, s.w = f, bufio.NewWriter(f)
	return s, nil
}

func (s *importState) has(rel string) bool { return s.seen[rel] }

// record notes rel as done. Lines are flushed at most every 200 ms: what a
// crash loses is only re-sent, never duplicated.
func (s *importState) record(rel string, docID int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := fmt.Fprintf(s.w, "%s\t%d\n", rel, docID); err != nil {
		return err
	}
	if time.Since(s.last) > 200*time.Millisecond {
		s.last = time.Now()
		return s.w.Flush()
	}
	return nil
}

func (s *importState) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.w.Flush()
	_ = s.f.Close()
}

// isFatal tells errors that would fail every other file too.
func isFatal(err error) bool {
	st := client.StatusOf(err)
	return st == http.StatusUnauthorized || st == http.StatusForbidden && strings.HasPrefix(client.DetailOf(err), "Missing required scope")
}
