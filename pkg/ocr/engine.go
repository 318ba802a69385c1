package ocr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docrepo/docrepo/pkg/extract"
	"github.com/docrepo/docrepo/pkg/spawn"
	"github.com/docrepo/docrepo/pkg/tempfiles"
)

// Defaults of Config.
const (
	DefaultLangs       = "eng"
	DefaultPageTimeout = 2 * time.Minute
	DefaultDocTimeout  = time.Hour
	DefaultNice        = 10
	DefaultDocuments   = 4
	// maxPageText caps what one page's OCR may print (a page of text is a
	// few KiB).
	maxPageText = 1 << 20
	// stderrTail is how much of a failing tool's standard error is kept
	// for the error message.
	stderrTail = 512
)

// TempPrefix starts the names of the directories pages are rendered in
// (with the process id: tempfiles.Pattern); New removes those a process
// that is gone left behind.
const TempPrefix = "docrepo-ocr-"

// Errors callers may test with errors.Is.
var (
	// ErrUnavailable: the OCR programs are not installed or do not work.
	ErrUnavailable = errors.New("ocr: tesseract is not available")
	// ErrPageTimeout: one page took longer than Config.PageTimeout.
	ErrPageTimeout = errors.New("ocr: page time limit exceeded")
	// ErrDocTimeout: a document took longer than Config.DocTimeout.
	ErrDocTimeout = errors.New("ocr: document time limit exceeded")
	// ErrLanguage: a language that is not installed was asked for.
	ErrLanguage = errors.New("ocr: language not installed")
)

// Config configures an Engine. Zero values take the defaults.
type Config struct {
	// Tesseract and Pdftoppm are the programs (default: found on PATH).
	Tesseract, Pdftoppm string
	// Langs are the default languages, Tesseract style: "eng",
	// "deu+eng" (default DefaultLangs).
	Langs string
	// Workers is the number of pages read at once, each by one
	// single-threaded Tesseract process (default: half the CPUs, at least
	// one), so that OCR never takes every core from searches.
	Workers int
	// PageTimeout bounds rendering plus reading one page; DocTimeout one
	// document, queueing included.
	PageTimeout, DocTimeout time.Duration
	// Nice is the scheduling priority of the OCR processes (default 10,
	// below the services; a negative value leaves it unchanged).
	Nice int
	// OSD turns on Tesseract's orientation and script detection (page
	// segmentation mode 1 instead of 3): upside-down and sideways scans
	// are read, at about 15% more time per page.
	OSD bool
	// TempDir holds rendered pages (default the system temp directory).
	TempDir string
	// Documents is how many documents are read at once: the indexer's
	// OCR stage runs that many jobs (default DefaultDocuments).
	Documents int
}

// Engine reads page images with Tesseract in a bounded pool of workers.
// It is safe for concurrent use; pages of concurrent documents are taken
// in turn, so one long scan does not hold back a short one.
type Engine struct {
	cfg   Config
	langs map[string]bool

	mu      sync.Mutex
	cond    *sync.Cond
	docs    []*docRun // documents with queued pages, in turn order
	next    int       // index in docs of the next document to take from
	closed  bool
	workers sync.WaitGroup
	stats   Status
	active  map[*docRun]struct{}
}

// New checks that Tesseract runs and which languages it has, and starts
// the workers. It fails with ErrUnavailable when Tesseract is missing and
// with ErrLanguage when a default language is not installed.
func New(cfg Config) (*Engine, error) {
	if cfg.Tesseract == "" {
		cfg.Tesseract = "tesseract"
	}
	if cfg.Pdftoppm == "" {
		cfg.Pdftoppm = "pdftoppm"
	}
	if cfg.Langs == "" {
		cfg.Langs = DefaultLangs
	}
	if cfg.Workers <= 0 {
		cfg.Workers = max(1, runtime.NumCPU()/2)
	}
	if cfg.PageTimeout <= 0 {
		cfg.PageTimeout = DefaultPageTimeout
	}
	if cfg.DocTimeout <= 0 {
		cfg.DocTimeout = DefaultDocTimeout
	}
	if cfg.Nice == 0 {
		cfg.Nice = DefaultNice
	}
	cfg.Nice = max(cfg.Nice, 0)
	if cfg.Documents <= 0 {
		cfg.Documents = DefaultDocuments
	}
	langs, err := listLangs(cfg.Tesseract)
	if err != nil {
		return nil, err
	}
	// Pages a killed predecessor was rendering are removed.
	if removed, err := tempfiles.Sweep(cfg.TempDir, TempPrefix); err == nil && len(removed) > 0 {
		slog.Info("ocr: removed the page directories of earlier processes", "directories", len(removed))
	}
	e := &Engine{cfg: cfg, langs: langs, active: map[*docRun]struct{}{}}
	if err := e.CheckLangs(cfg.Langs); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath(cfg.Pdftoppm); err != nil {
		return nil, fmt.Errorf("%w: %s (poppler-utils) not found: %v", ErrUnavailable, cfg.Pdftoppm, err)
	}
	e.cond = sync.NewCond(&e.mu)
	e.stats.Workers = cfg.Workers
	e.stats.Langs = cfg.Langs
	for range cfg.Workers {
		e.workers.Add(1)
		go e.work()
	}
	return e, nil
}

// Close stops the workers once the pages being read are done; queued pages
// fail.
func (e *Engine) Close() {
	e.mu.Lock()
	e.closed = true
	e.cond.Broadcast()
	e.mu.Unlock()
	e.workers.Wait()
}

// Langs returns the default languages.
func (e *Engine) Langs() string { return e.cfg.Langs }

// OSD reports whether pages are read with orientation detection.
func (e *Engine) OSD() bool { return e.cfg.OSD }

// Installed returns the installed languages, sorted.
func (e *Engine) Installed() []string {
	out := make([]string, 0, len(e.langs))
	for l := range e.langs {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

// langsPattern is what a language list may look like: traineddata names
// joined by "+" (never a path).
var langsPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,31}(\+[A-Za-z][A-Za-z0-9_]{0,31}){0,7}$`)

// CheckLangs reports whether langs ("deu+eng") is well formed and
// installed.
func (e *Engine) CheckLangs(langs string) error {
	if !langsPattern.MatchString(langs) {
		return fmt.Errorf("%w: %q is not a language list like eng or deu+eng", ErrLanguage, langs)
	}
	for _, l := range strings.Split(langs, "+") {
		if !e.langs[l] {
			return fmt.Errorf("%w: %s (installed: %s; Debian packages tesseract-ocr-LANG add more)", ErrLanguage, l, strings.Join(e.Installed(), ", "))
		}
	}
	return nil
}

// listLangs runs `tesseract --list-langs`.
func listLangs(bin string) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--list-langs").Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s --list-langs: %v (install the Debian packages tesseract-ocr and tesseract-ocr-eng)", ErrUnavailable, bin, err)
	}
	langs := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.Contains(line, " ") || strings.HasSuffix(line, ":") {
			continue // the "List of available languages ..." header
		}
		langs[line] = true
	}
	delete(langs, "osd") // orientation data, not a language
	if len(langs) == 0 {
		return nil, fmt.Errorf("%w: no language data installed (Debian package tesseract-ocr-eng)", ErrUnavailable)
	}
	return langs, nil
}

// File binds the engine to one file: the result reads the pages Extract asks
// for from path, in languages langs ("" means the defaults). docID only
// labels the work in Status.
func (e *Engine) File(path, langs string, docID int64) *File {
	if langs == "" {
		langs = e.cfg.Langs
	}
	return &File{e: e, path: path, langs: langs, docID: docID}
}

// File is an Engine bound to one file; it implements extract.OCR.
type File struct {
	e     *Engine
	path  string
	langs string
	docID int64
}

var _ extract.OCR = (*File)(nil)

// Recognize reads the pages in the engine's pool and waits for them, at
// most Config.DocTimeout.
func (f *File) Recognize(ctx context.Context, format extract.Format, pages []extract.OCRPage) ([]extract.OCRText, error) {
	if err := f.e.CheckLangs(f.langs); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, f.e.cfg.DocTimeout, ErrDocTimeout)
	defer cancel()
	dir, err := os.MkdirTemp(f.e.cfg.TempDir, tempfiles.Pattern(TempPrefix))
	if err != nil {
		return nil, fmt.Errorf("ocr: temporary directory: %w", err)
	}
	defer os.RemoveAll(dir)
	run := &docRun{ctx: ctx, file: f, format: format, dir: dir, pages: pages,
		results: make([]extract.OCRText, len(pages)), done: make(chan struct{}), started: time.Now()}
	f.e.submit(run)
	select {
	case <-run.done:
	case <-ctx.Done():
		f.e.withdraw(run)
		<-run.done // pages being read stop with ctx
	}
	if err := context.Cause(ctx); err != nil {
		if errors.Is(err, ErrDocTimeout) {
			metricFailures.WithLabelValues("doc_timeout").Inc()
			return nil, fmt.Errorf("%w (%v)", ErrDocTimeout, f.e.cfg.DocTimeout)
		}
		return nil, err
	}
	return run.results, nil
}

// docRun is one document's pages in the pool.
type docRun struct {
	ctx     context.Context
	file    *File
	format  extract.Format
	dir     string
	pages   []extract.OCRPage
	results []extract.OCRText
	started time.Time

	queued  int // next page not yet taken
	running int // pages being read
	done    chan struct{}
	closed  bool
}

func (e *Engine) submit(r *docRun) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.active[r] = struct{}{}
	e.stats.DocumentsInProgress++
	metricDocsInProgress.Inc()
	if e.closed || len(r.pages) == 0 {
		e.finishLocked(r, errors.New("ocr: engine closed"))
		return
	}
	e.stats.PagesQueued += len(r.pages)
	metricPagesQueued.Add(float64(len(r.pages)))
	e.docs = append(e.docs, r)
	e.cond.Broadcast()
}

// withdraw takes a document's queued pages out of the pool.
func (e *Engine) withdraw(r *docRun) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dropQueuedLocked(r, context.Cause(r.ctx))
}

func (e *Engine) dropQueuedLocked(r *docRun, err error) {
	for i := r.queued; i < len(r.pages); i++ {
		r.results[i].Err = err
	}
	left := len(r.pages) - r.queued
	r.queued = len(r.pages)
	e.stats.PagesQueued -= left
	metricPagesQueued.Sub(float64(left))
	e.removeLocked(r)
	if r.running == 0 {
		e.finishLocked(r, nil)
	}
}

func (e *Engine) removeLocked(r *docRun) {
	for i, d := range e.docs {
		if d == r {
			e.docs = append(e.docs[:i], e.docs[i+1:]...)
			if e.next > i {
				e.next--
			}
			break
		}
	}
}

func (e *Engine) finishLocked(r *docRun, err error) {
	if r.closed {
		return
	}
	if err != nil {
		for i := r.queued; i < len(r.pages); i++ {
			r.results[i].Err = err
		}
	}
	r.closed = true
	delete(e.active, r)
	e.stats.DocumentsInProgress--
	metricDocsInProgress.Dec()
	close(r.done)
}

// take returns the next page to read, taking documents in turn.
func (e *Engine) take() (*docRun, int, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for len(e.docs) == 0 && !e.closed {
		e.cond.Wait()
	}
	if e.closed {
		return nil, 0, false
	}
	if e.next >= len(e.docs) {
		e.next = 0
	}
	r := e.docs[e.next]
	i := r.queued
	r.queued++
	r.running++
	if r.queued == len(r.pages) {
		e.removeLocked(r)
	} else {
		e.next++
	}
	e.stats.PagesQueued--
	e.stats.PagesInProgress++
	metricPagesQueued.Dec()
	metricPagesInProgress.Inc()
	return r, i, true
}

func (e *Engine) work() {
	defer e.workers.Done()
	for {
		r, i, ok := e.take()
		if !ok {
			e.mu.Lock()
			for _, d := range slices.Clone(e.docs) {
				e.dropQueuedLocked(d, errors.New("ocr: engine closed"))
			}
			e.mu.Unlock()
			return
		}
		start := time.Now()
		text, err := e.page(r, r.pages[i])
		metricPageSeconds.Observe(time.Since(start).Seconds())
		result := "ok"
		switch {
		case err != nil:
			result = "failed"
			metricFailures.WithLabelValues(failureReason(err)).Inc()
		case strings.TrimSpace(text) == "":
			result = "empty"
		}
		metricPages.WithLabelValues(result).Inc()
		e.mu.Lock()
		r.results[i] = extract.OCRText{Text: text, Err: err}
		r.running--
		e.stats.PagesInProgress--
		metricPagesInProgress.Dec()
		if err != nil {
			e.stats.PagesFailed++
		} else {
			e.stats.PagesDone++
		}
		if r.running == 0 && r.queued == len(r.pages) {
			e.finishLocked(r, nil)
		}
		e.mu.Unlock()
	}
}

// page renders (PDF) and reads one page under the page time limit.
func (e *Engine) page(r *docRun, p extract.OCRPage) (string, error) {
	if err := r.ctx.Err(); err != nil {
		return "", context.Cause(r.ctx)
	}
	ctx, cancel := context.WithTimeoutCause(r.ctx, e.cfg.PageTimeout, ErrPageTimeout)
	defer cancel()
	text, err := e.readPage(ctx, r, p)
	if err != nil && ctx.Err() != nil {
		if cause := context.Cause(ctx); errors.Is(cause, ErrPageTimeout) {
			return "", fmt.Errorf("page %d: %w (%v)", p.Number, ErrPageTimeout, e.cfg.PageTimeout)
		}
		return "", context.Cause(ctx)
	}
	return text, err
}

func (e *Engine) readPage(ctx context.Context, r *docRun, p extract.OCRPage) (string, error) {
	args := []string{"stdout", "-l", r.file.langs, "--psm", "3"}
	if e.cfg.OSD {
		args[4] = "1"
	}
	input := r.file.path
	if r.format == extract.FormatPDF {
		prefix := filepath.Join(r.dir, "p"+strconv.Itoa(p.Number))
		// -gray PGM: no compression to spend time on, and what Tesseract
		// binarises anyway.
		if _, err := e.run(ctx, e.cfg.Pdftoppm, "render", "-r", strconv.Itoa(p.DPI), "-gray",
			"-f", strconv.Itoa(p.Number), "-l", strconv.Itoa(p.Number), "-singlefile", r.file.path, prefix); err != nil {
			return "", err
		}
		input = prefix + ".pgm"
		defer os.Remove(input)
		// Tesseract reads a page skewed by 1° but loses most of one
		// skewed by 3° (measured): straighten it first.
		if _, err := deskewNiced(input, e.cfg.Nice); err != nil {
			return "", &toolError{"render", fmt.Errorf("deskew: %w", err)}
		}
		// PGM carries no resolution; without it Tesseract assumes 70 dpi
		// and reads less (measured: 0.934 against 0.913 word recall).
		args = append(args, "--dpi", strconv.Itoa(p.DPI))
	} else if r.format == extract.FormatTIFF {
		args = append(args, "-c", "tessedit_page_number="+strconv.Itoa(p.Number-1))
	}
	out, err := e.run(ctx, e.cfg.Tesseract, "recognise", append([]string{input}, args...)...)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(out, "\f\n "), nil
}

// toolError is a failure of one of the external programs.
type toolError struct {
	step string // render or recognise
	err  error
}

func (t *toolError) Error() string { return "ocr " + t.step + ": " + t.err.Error() }
func (t *toolError) Unwrap() error { return t.err }

// run runs an OCR program at low priority with one thread and returns its
// standard output (at most maxPageText bytes). The program dies with this
// process (a parent-death signal): a search process killed in the middle
// of a page leaves no tesseract or pdftoppm running.
func (e *Engine) run(ctx context.Context, bin, step string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "OMP_THREAD_LIMIT=1", "LC_ALL=C")
	cmd.WaitDelay = 5 * time.Second
	cmd.SysProcAttr = dieWithParent()
	var stdout limitedBuffer
	stdout.max = maxPageText
	var stderr tailBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The parent-death signal follows the thread that started the
	// program, not the process: pkg/spawn forks it on a thread that never
	// exits, so no thread ending (deskew's do, on purpose) kills a
	// program still reading.
	if err := spawn.Start(cmd, 0); err != nil {
		return "", &toolError{step, err}
	}
	lowerPriority(cmd.Process.Pid, e.cfg.Nice)
	if err := cmd.Wait(); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", &toolError{step, fmt.Errorf("%s: %v: %s", filepath.Base(bin), err, strings.TrimSpace(stderr.String()))}
	}
	return stdout.String(), nil
}

// limitedBuffer keeps the first max bytes written and drops the rest.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// tailBuffer keeps the last stderrTail bytes written.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > stderrTail {
		t.b = append(t.b[:0], t.b[len(t.b)-stderrTail:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }

var _ io.Writer = (*tailBuffer)(nil)

// failureReason labels an OCR failure for metrics.
func failureReason(err error) string {
	var te *toolError
	switch {
	case errors.Is(err, ErrPageTimeout):
		return "page_timeout"
	case errors.Is(err, ErrDocTimeout):
		return "doc_timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &te) && te.step == "render":
		return "render"
	}
	return "recognise"
}
