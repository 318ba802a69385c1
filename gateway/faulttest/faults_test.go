package faulttest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docrepo/docrepo/pkg/client"
	"github.com/docrepo/docrepo/pkg/launcher"
)

// stack is a devstack run: the stack of `make run` in a directory of its
// own, on ports of its own.
type stack struct {
	root, dataDir string
	url, dbURL    string
	adminToken    string
	pgPort        int
	ports         map[string]int // process -> a port it listens on
	devstack      *launcher.Process
}

func freePortRange(t *testing.T) int {
	t.Helper()
	for range 50 {
		// Below the kernel's range for outgoing connections' local ports
		// (32768 on), which a connection could take before devstack binds.
		base := 20000 + rand.IntN(1270)*10
		ok := true
		for i := 0; i <= 60 && ok; i++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
			if err != nil {
				ok = false
				continue
			}
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free port range")
	return 0
}

func startStack(t *testing.T) *stack {
	t.Helper()
	root, err := launcher.RepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	binDir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := launcher.Build(ctx, root, binDir, "devstack", "devnats", "gateway", "document", "folder", "schema", "search"); err != nil {
		t.Fatalf("build: %v", err)
	}
	// Postgres runs as the postgres user when the test runs as root: its
	// directory must be reachable by it (t.TempDir is 0700).
	dataDir, err := os.MkdirTemp("", "docrepo-faults-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	base := freePortRange(t)
	s := &stack{root: root, dataDir: dataDir, url: fmt.Sprintf("http://127.0.0.1:%d", base+40), pgPort: base + 41,
		ports: map[string]int{"document": base + 1, "folder": base + 2, "search": base + 3, "schema": base + 4,
			"gateway": base + 40, "devnats": base + 42, "devnats-empty": base + 42, "postgres": base + 41}}
	// The stack's output goes to a file, quoted when a document goes
	// missing (and to stderr too with DOCREPO_FAULTS_LOG=1).
	logFile, err := os.Create(filepath.Join(dataDir, "stack.log"))
	if err != nil {
		t.Fatal(err)
	}
	var out io.Writer = logFile
	if os.Getenv("DOCREPO_FAULTS_LOG") != "" {
		out = io.MultiWriter(logFile, os.Stderr)
	}
	out = &launcher.LockedWriter{W: out}
	s.devstack, err = launcher.Start(launcher.Spec{Name: "devstack", Path: filepath.Join(binDir, "devstack"),
		Args: []string{"-data-dir", dataDir, "-bin-dir", binDir, "-http-addr", fmt.Sprintf("127.0.0.1:%d", base+40),
			"-base-port", strconv.Itoa(base), "-nats-port", strconv.Itoa(base + 42), "-pg-port", strconv.Itoa(base + 41)},
		Env: []string{"DATABASE_URL=", "DOCREPO_LOG_LEVEL=info"}, Output: out, Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// SIGINT: devstack stops its children and its Postgres.
		_ = s.devstack.Stop(60 * time.Second)
		_ = exec.Command("bash", filepath.Join(root, "deploy/dev/postgres.sh"), "stop", filepath.Join(dataDir, "pg")).Run()
		os.RemoveAll(dataDir)
	})
	envFile := filepath.Join(dataDir, "devstack.env")
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if b, err := os.ReadFile(envFile); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				k, v, _ := strings.Cut(line, "=")
				switch k {
				case "DATABASE_URL":
					s.dbURL = v
				case "DOCREPO_ADMIN_TOKEN":
					s.adminToken = v
				}
			}
			if resp, err := http.Get(s.url + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					return s
				}
			}
		}
		select {
		case <-s.devstack.Done():
			t.Fatalf("devstack exited: %v (DOCREPO_FAULTS_LOG=1 shows its output)", s.devstack.Err())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the stack did not come up in 5 minutes")
		}
	}
}

func (s *stack) pid(name string) (int, error) {
	b, err := os.ReadFile(filepath.Join(s.dataDir, "pids", name+".pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// procOf is the process a fault kills: devnats-empty is NATS losing its
// store as it dies.
func procOf(fault string) string {
	if fault == "devnats-empty" {
		return "devnats"
	}
	return fault
}

func listening(port int) bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// pgctl runs pg_ctl on the stack's private cluster (as its owner).
func (s *stack) pgctl(args ...string) error {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(bins) == 0 {
		return errors.New("pg_ctl not found")
	}
	sort.Strings(bins)
	cmd := append([]string{bins[len(bins)-1], "-D", filepath.Join(s.dataDir, "pg")}, args...)
	if os.Geteuid() == 0 {
		cmd = append([]string{"runuser", "-u", "postgres", "--"}, cmd...)
	}
	out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %v: %s", cmd, err, out)
	}
	return nil
}

// crash kills a process the way a crash would and returns when it is
// gone (the supervisor restarts it; Postgres is started again here, as an
// operator's init system would).
func (s *stack) crash(t *testing.T, name string) {
	t.Helper()
	if name == "postgres" {
		if err := s.pgctl("stop", "-m", "immediate", "-w"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second) // down for a while, as a restart takes
		if err := s.pgctl("start", "-w", "-t", "60", "-l", filepath.Join(s.dataDir, "pg", "server.log"),
			"-o", fmt.Sprintf("-h 127.0.0.1 -p %d -k %s -c fsync=off -c max_connections=300", s.pgPort, filepath.Join(s.dataDir, "pg"))); err != nil {
			t.Fatal(err)
		}
		return
	}
	pid, err := s.pid(procOf(name))
	if err != nil {
		t.Fatal(err)
	}
	if name == "devnats-empty" {
		// The server loses its store: the directory moves away while it
		// runs (it keeps writing into the moved one), and the supervisor
		// restarts it on an empty one.
		store := filepath.Join(s.dataDir, "nats")
		if err := os.Rename(store, store+".lost"); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s (%d): %v", name, pid, err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
	}
	t.Fatalf("%s (%d) still alive after SIGKILL", name, pid)
}

// back waits until the crashed process serves again: a new pid that
// listens (Postgres: accepting connections).
func (s *stack) back(t *testing.T, name string, oldPid int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for ; time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if name != "postgres" {
			if pid, err := s.pid(procOf(name)); err != nil || pid == oldPid {
				continue
			}
		}
		if listening(s.ports[name]) {
			return
		}
	}
	t.Fatalf("%s not back after 60 s", name)
}

// uploader uploads like a careful user: each document has its own
// Idempotency-Key, and a failed attempt is retried with the same key
// until it is acknowledged. Its REST client does not retry by itself, so
// that every failed attempt is counted.
type uploader struct {
	api      *client.Client
	folderID int64
	word     string

	mu       sync.Mutex
	failures []time.Time // every failed attempt
	acked    atomic.Int64
	next     atomic.Int64
}

func (c *uploader) uploadOnce(i int64) error {
	_, err := c.api.Upload(context.Background(), client.Upload{
		FolderID: c.folderID, Filename: fmt.Sprintf("fault-%06d.txt", i),
		File:           strings.NewReader(fmt.Sprintf("%s document %d written while processes were being killed\n", c.word, i)),
		Metadata:       client.Metadata{Description: fmt.Sprintf("fault-%06d", i)},
		IdempotencyKey: fmt.Sprintf("%s-%d", c.word, i),
	})
	return err
}

// upload uploads document i until it is acknowledged (or 2 minutes pass).
func (c *uploader) upload(ctx context.Context, i int64) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := c.uploadOnce(i)
		if err == nil {
			c.acked.Add(1)
			return nil
		}
		c.mu.Lock()
		c.failures = append(c.failures, time.Now())
		c.mu.Unlock()
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("document %d never acknowledged: %w", i, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *uploader) failuresBetween(from, to time.Time) (in, out int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.failures {
		if !f.Before(from) && !f.After(to) {
			in++
		} else {
			out++
		}
	}
	return in, out
}

func (c *uploader) searchTotal() (int64, error) {
	r, err := c.api.Search(context.Background(), client.SearchRequest{Where: client.FTS(c.word), Limit: 1})
	if err != nil {
		return 0, err
	}
	return r.Total, nil
}

// explainMissing logs, for each acknowledged document search does not
// find, its row, its outbox events and every line of the stack's log that
// names it: the trail of a lost index update.
func explainMissing(t *testing.T, s *stack, c *uploader, pool *pgxpool.Pool) {
	t.Helper()
	found := map[int64]bool{}
	for offset := 0; ; offset += 500 {
		r, err := c.api.Search(context.Background(), client.SearchRequest{Where: client.FTS(c.word),
			Sort: []client.Sort{{Field: "id"}}, Limit: 500, Offset: offset})
		if err != nil {
			t.Logf("explain: search: %v", err)
			return
		}
		for _, id := range r.IDs() {
			found[id] = true
		}
		if len(r.Results) < 500 {
			break
		}
	}
	rows, err := pool.Query(context.Background(), `SELECT id, rev, description FROM document.documents WHERE description LIKE 'fault-%' ORDER BY id`)
	if err != nil {
		t.Logf("explain: %v", err)
		return
	}
	type doc struct {
		id, rev int64
		desc    string
	}
	var missing []doc
	for rows.Next() {
		var d doc
		if err := rows.Scan(&d.id, &d.rev, &d.desc); err == nil && !found[d.id] {
			missing = append(missing, d)
		}
	}
	rows.Close()
	logText, _ := os.ReadFile(filepath.Join(s.dataDir, "stack.log"))
	for _, d := range missing {
		t.Logf("missing from search: doc %d rev %d (%s)", d.id, d.rev, d.desc)
		ev, err := pool.Query(context.Background(), `SELECT id, kind, rev, created_at, published_at FROM document.outbox WHERE aggregate_id = $1 ORDER BY id`, d.id)
		if err == nil {
			for ev.Next() {
				var id, rev int64
				var kind string
				var created time.Time
				var published *time.Time
				_ = ev.Scan(&id, &kind, &rev, &created, &published)
				t.Logf("  outbox %d %s rev %d created %s published %v", id, kind, rev, created.Format(time.RFC3339Nano), published)
			}
			ev.Close()
		}
		needle := regexp.MustCompile(fmt.Sprintf(`doc_id=%d\b|"doc_id":%d\b`, d.id, d.id))
		for _, line := range strings.Split(string(logText), "\n") {
			if needle.MatchString(line) {
				t.Logf("  log: %s", line)
			}
		}
	}
}

type row struct {
	fault                   string
	uploads, failed, stray  int
	docReads, folderReads   int // reads that failed during the fault
	back, searchable, total time.Duration
}

// reader reads while the uploads run: a document (the document service
// alone) and the folder list (the folder service alone), so the table
// shows which reads a dead process takes down with it: only its own.
type reader struct {
	c     *uploader
	docID int64
	mu    sync.Mutex
	fails map[string][]time.Time // "document", "folders"
	stop  chan struct{}
	done  chan struct{}
}

func (r *reader) run() {
	defer close(r.done)
	for {
		select {
		case <-r.stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
		ctx := context.Background()
		for kind, read := range map[string]func() error{
			"document": func() error { _, err := r.c.api.GetDocument(ctx, r.docID); return err },
			"folders":  func() error { _, err := r.c.api.ListFolders(ctx, client.FolderQuery{}); return err },
		} {
			if err := read(); err != nil {
				r.mu.Lock()
				r.fails[kind] = append(r.fails[kind], time.Now())
				r.mu.Unlock()
			}
		}
	}
}

// failures returns the failed reads of kind within [from, to] and outside.
func (r *reader) failures(kind string, from, to time.Time) (in, out int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.fails[kind] {
		if !f.Before(from) && !f.After(to) {
			in++
		} else {
			out++
		}
	}
	r.fails[kind] = nil
	return in, out
}

func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("fault injection runs the whole stack; skipped with -short")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash for deploy/dev/postgres.sh")
	}
	perFault := int64(30)
	long := os.Getenv("DOCREPO_FAULTS_LONG") != ""
	if long {
		perFault = 150
	}
	s := startStack(t)
	api, err := client.New(s.url, s.adminToken, client.Options{HTTPClient: &http.Client{Timeout: 30 * time.Second}, Retry: client.NoRetry})
	if err != nil {
		t.Fatal(err)
	}
	c := &uploader{api: api, word: fmt.Sprintf("faultrun%d", time.Now().UnixNano()%1e9)}
	f, err := api.CreateFolder(context.Background(), c.word, 0)
	if err != nil {
		t.Fatalf("create folder: %v", err)
	}
	c.folderID = f.FolderID

	// A document to read during the faults (not one of the counted ones).
	probe, err := api.Upload(context.Background(), client.Upload{FolderID: c.folderID, Filename: "probe.txt",
		File: strings.NewReader("read while processes are killed"), Metadata: client.Metadata{Description: "reader probe"}})
	if err != nil {
		t.Fatalf("probe upload: %v", err)
	}
	rd := &reader{c: c, docID: probe.DocID, fails: map[string][]time.Time{}, stop: make(chan struct{}), done: make(chan struct{})}
	go rd.run()
	defer func() { close(rd.stop); <-rd.done }()
	// Which reads may fail while a process is down: those it serves.
	readsDependOn := map[string][]string{"gateway": {"document", "folders"}, "document": {"document"},
		"folder": {"folders"}, "postgres": {"document", "folders"}}

	const workers = 4
	faults := []string{"gateway", "document", "folder", "schema", "search", "devnats", "devnats-empty", "postgres"}
	var rows []row
	ctx := context.Background()
	for _, fault := range faults {
		phaseStart := c.next.Load()
		phaseEnd := phaseStart + perFault
		errs := make(chan error, workers)
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := c.next.Add(1) - 1
					if i >= phaseEnd {
						return
					}
					if err := c.upload(ctx, i); err != nil {
						errs <- err
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			}()
		}
		// Fault once a third of the phase's uploads are in.
		for c.next.Load() < phaseStart+perFault/3 {
			time.Sleep(10 * time.Millisecond)
		}
		oldPid, _ := s.pid(procOf(fault))
		killed := time.Now()
		s.crash(t, fault)
		s.back(t, fault, oldPid)
		backAt := time.Now()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("%s: %v", fault, err)
		}
		c.next.Store(phaseEnd)
		uploadsDone := time.Now()
		// Every acknowledged document searchable: poll the total.
		want := c.acked.Load()
		var caughtUp time.Time
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if n, err := c.searchTotal(); err == nil && n >= want {
				caughtUp = time.Now()
				break
			}
		}
		// Requests may fail from the kill until the process answers again
		// (and a little after, while clients reconnect).
		in, out := c.failuresBetween(killed, backAt.Add(3*time.Second))
		c.mu.Lock()
		c.failures = nil
		c.mu.Unlock()
		r := row{fault: fault, uploads: int(perFault), failed: in, stray: out, back: backAt.Sub(killed)}
		for _, kind := range []string{"document", "folders"} {
			in, out := rd.failures(kind, killed, backAt.Add(3*time.Second))
			if kind == "document" {
				r.docReads = in
			} else {
				r.folderReads = in
			}
			if out > 0 {
				t.Errorf("%s: %d %s reads failed outside the fault window", fault, out, kind)
			}
			if in > 0 && !slices.Contains(readsDependOn[fault], kind) {
				t.Errorf("%s down: %d %s reads failed, though no %s read goes through it", fault, in, kind, kind)
			}
		}
		if caughtUp.IsZero() {
			t.Errorf("%s: %d acknowledged documents not all searchable 60 s after the uploads ended", fault, want)
			r.searchable = -1
		} else {
			r.searchable = caughtUp.Sub(maxTime(backAt, uploadsDone))
			if caughtUp.Sub(backAt) > 5*time.Second && caughtUp.Sub(uploadsDone) > 5*time.Second {
				t.Errorf("%s: searchable %v after the process was back and %v after the last upload, want <= 5 s", fault, caughtUp.Sub(backAt), caughtUp.Sub(uploadsDone))
			}
		}
		if out > 0 {
			t.Errorf("%s: %d requests failed outside the fault window", fault, out)
		}
		rows = append(rows, r)
	}

	// Stored = acknowledged, each once.
	pool, err := pgxpool.New(ctx, s.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var stored, distinct int64
	if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT description) FROM document.documents WHERE description LIKE 'fault-%'`).
		Scan(&stored, &distinct); err != nil {
		t.Fatal(err)
	}
	acked := c.acked.Load()
	total, err := c.searchTotal()
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	fmt.Fprintf(&table, "fault injection: %d uploads per fault, %d clients, every process of `make run` (devstack)\n", perFault, workers)
	fmt.Fprintf(&table, "%-13s %8s %8s %10s %12s %10s %12s\n", "fault", "uploads", "failed", "back after", "searchable*", "doc reads", "folder reads")
	for _, r := range rows {
		fmt.Fprintf(&table, "%-13s %8d %8d %10s %12s %10d %12d\n", r.fault, r.uploads, r.failed, r.back.Round(time.Millisecond), r.searchable.Round(time.Millisecond), r.docReads, r.folderReads)
	}
	fmt.Fprintf(&table, "acknowledged %d, stored %d (distinct %d): lost %d, duplicated %d; searchable %d\n",
		acked, stored, distinct, acked-distinct, stored-distinct, total)
	fmt.Fprintf(&table, "failed: requests that failed (and were retried with the same Idempotency-Key) between the kill and 3 s after the process was back;\n")
	fmt.Fprintf(&table, "doc reads, folder reads: GET of a document and of the folder list every 50 ms that failed in the same window\n")
	fmt.Fprintf(&table, "* searchable: from the later of the process back and the phase's last upload until every acknowledged document was found by search\n")
	fmt.Fprintf(&table, "devnats-empty: NATS killed and restarted on an empty store (stream, consumers, dead-letter stream and unconsumed events gone)\n")
	if long || testing.Verbose() {
		fmt.Print(table.String())
	} else {
		t.Log("\n" + table.String())
	}
	if stored != distinct {
		t.Errorf("%d documents stored twice", stored-distinct)
	}
	if distinct != acked {
		t.Errorf("acknowledged %d, stored %d", acked, distinct)
	}
	if total != acked {
		t.Errorf("search finds %d, acknowledged %d", total, acked)
		explainMissing(t, s, c, pool)
	}

	// Last, one user's scans flood the OCR queue while another's text
	// documents must stay searchable within seconds.
	if _, err := exec.LookPath("tesseract"); err != nil {
		t.Log("tesseract not installed: no OCR flood (make test installs tesseract-ocr)")
		return
	}
	flood := floodPhase(t, s, 40, 40)
	if long || testing.Verbose() {
		fmt.Print(flood)
	} else {
		t.Log("\n" + flood)
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
