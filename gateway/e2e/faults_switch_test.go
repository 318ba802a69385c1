package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	rest "github.com/docrepo/docrepo/pkg/client"
	"github.com/docrepo/docrepo/pkg/launcher"
)

// TestEmbedderSwitchSurvivesKills kills the search service with SIGKILL
// while it re-embeds its index for a new embedder (hash to use, online,
// DOCREPO_EMBEDDER_CHANGE=rebuild): once mid-way (the new generation is
// being written, the old one still CURRENT) and once in the switch (the
// moment CURRENT names the new generation). Each time it is started
// again with the same settings, as a supervisor would. What a user relies
// on: full-text and vector searches answer whenever the process is up;
// the re-embedding restarts and completes; afterwards the index records
// the new embedder, holds every document (those uploaded between the
// kills included) and finds each by vector search.
func TestEmbedderSwitchSurvivesKills(t *testing.T) {
	t.Parallel()
	modelDir := os.Getenv("DOCREPO_USE_MODEL_DIR")
	if modelDir == "" {
		if os.Getenv("DOCREPO_TEST_STRICT") == "1" {
			t.Fatal("DOCREPO_USE_MODEL_DIR is not set (make test sets it to deploy/dev/model.sh's directory)")
		}
		t.Skip("DOCREPO_USE_MODEL_DIR is not set: no sentence encoder to switch to")
	}
	ctx := context.Background()
	searchAddr, err := launcher.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	s := startOwnStack(t, []string{"folder", "schema", "document", "gateway"}, map[string]string{"search": searchAddr}, nil)
	indexDir := t.TempDir()
	base := append(s.CommonEnv(), "DOCREPO_GRPC_ADDR="+searchAddr, "DOCREPO_INDEX_DIR="+indexDir,
		"DOCREPO_INDEX_CONSUMER=faults-switch", "DOCREPO_EMBED_DEFER=on", "DOCREPO_LOG_LEVEL=info")
	// One indexing worker: the re-embedding writes batches of 16
	// documents, so a kill can land with some of them in the new
	// generation.
	useEnv := []string{"DOCREPO_EMBEDDER=use", "DOCREPO_USE_MODEL_DIR=" + modelDir, "DOCREPO_EMBEDDER_CHANGE=rebuild", "DOCREPO_INDEX_WORKERS=1"}

	// The search process, started by the test as a supervisor would.
	type proc struct {
		p       *launcher.Process
		metrics string
		out     *syncBuffer
	}
	var mu sync.Mutex
	var cur proc
	start := func(extra ...string) {
		t.Helper()
		metrics, err := launcher.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		out := &syncBuffer{}
		p, err := launcher.Start(launcher.Spec{Name: "search", Path: binaries["search"], Output: out,
			Env: append(append(append([]string(nil), base...), extra...), "DOCREPO_METRICS_ADDR="+metrics)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = p.Stop(30 * time.Second)
			if t.Failed() {
				t.Logf("search process %d, last 60 lines:\n%s", p.Pid(), lastLines(out.String(), 60))
			} else {
				t.Logf("search process %d (%s): %s", p.Pid(), strings.Join(extra, " "), milestones(out.String()))
			}
		})
		if err := launcher.WaitTCP(ctx, p, searchAddr, 2*time.Minute); err != nil {
			t.Fatalf("search: %v\n%s", err, out.String())
		}
		mu.Lock()
		cur = proc{p: p, metrics: metrics, out: out}
		mu.Unlock()
	}
	current := func() proc { mu.Lock(); defer mu.Unlock(); return cur }
	get := func(path string) string {
		resp, err := http.Get("http://" + current().metrics + path)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	currentGen := func() string {
		b, _ := os.ReadFile(filepath.Join(indexDir, "CURRENT"))
		return strings.TrimSpace(string(b))
	}

	u, _ := s.user()
	f, err := u.CreateFolder(ctx, uniq("switch"), 0)
	if err != nil {
		t.Fatal(err)
	}
	var docs []int64
	upload := func(i int) {
		t.Helper()
		// Enough text that re-embedding takes a while (some seconds:
		// three passages of 128 pieces a document), so that a kill can
		// land mid-way.
		var b strings.Builder
		fmt.Fprintf(&b, "killswitch%d the numbat eats termites in the eucalypt woodland, report %d.", i, i)
		for j := 0; b.Len() < 1200; j++ {
			fmt.Fprintf(&b, " Field note %d of survey %d: the colony moved along the creek bed, and the rangers counted the burrows again after the rain.", j, i)
		}
		up, err := u.Upload(ctx, rest.Upload{FolderID: f.FolderID, Filename: fmt.Sprintf("k%d.txt", i), File: strings.NewReader(b.String()), ContentType: "text/plain"})
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, up.DocID)
	}
	// DOCREPO_SWITCH_KILL_DOCS sets a larger index for measuring what a
	// kill mid-way costs (services/search/bench/results/reembed-resume-*).
	n := 60
	// Up to 97: a vector search answers at most 100 neighbours, and the
	// test finds every document (n + 3) in one.
	if v, err := strconv.Atoi(os.Getenv("DOCREPO_SWITCH_KILL_DOCS")); err == nil && v > n {
		n = min(v, 97)
	}
	killAt := max(32, n/2)
	for i := range n {
		upload(i)
	}
	fts := map[string]any{"fts": map[string]any{"field": "content", "query": "numbat"}}
	vector := map[string]any{"vector": map[string]any{"target": "content", "query": "numbat termites eucalypt woodland"}}
	// all reports whether where finds every document uploaded so far.
	all := func(where map[string]any) error {
		r, err := u.Search(ctx, rest.SearchRequest{Where: where, Limit: 100})
		if err != nil {
			return err
		}
		found := map[int64]bool{}
		for _, id := range r.IDs() {
			found[id] = true
		}
		for _, id := range docs {
			if !found[id] {
				return fmt.Errorf("document %d not found (%d of %d found; Docrepo-Reembedding %q)", id, len(r.IDs()), len(docs), r.Reembedding)
			}
		}
		return nil
	}

	// 1. The index, written with hash.
	start("DOCREPO_EMBEDDER=hash")
	eventually(t, 2*time.Minute, func() error {
		if err := all(fts); err != nil {
			return err
		}
		return all(vector)
	})
	if err := current().p.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	oldGen := currentGen()

	// Searches every 50 ms while the process is up; a failure counts when
	// the process was up (and had answered since its start) before and
	// after it.
	var up sync.Map // "up" -> bool
	var failures []string
	var answered int
	stop := make(chan struct{})
	searched := make(chan struct{})
	go func() {
		defer close(searched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			before, _ := up.Load("up")
			for _, where := range []map[string]any{fts, vector} {
				_, err := u.Search(ctx, rest.SearchRequest{Where: where, Limit: 5})
				after, _ := up.Load("up")
				switch {
				case err == nil:
					mu.Lock()
					answered++
					mu.Unlock()
				case before == true && after == true:
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
				}
			}
		}
	}()
	// restart starts the use process again and marks it up once a
	// search through the gateway answers (the gateway reconnects).
	restart := func() {
		t.Helper()
		start(useEnv...)
		eventually(t, time.Minute, func() error {
			_, err := u.Search(ctx, rest.SearchRequest{Where: fts, Limit: 1})
			return err
		})
		up.Store("up", true)
	}
	kill := func(why string) {
		t.Helper()
		up.Store("up", false)
		p := current().p
		if err := syscall.Kill(p.Pid(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.Done()
		t.Logf("killed the search service %s (CURRENT %s)", why, currentGen())
	}

	// 2. Killed mid-way: the new generation is being written, at least
	// two of its batches of 16 re-embedded (/readyz's progress), not all;
	// CURRENT still names the old one.
	restart()
	doneRe := regexp.MustCompile(`"done":(\d+)`)
	var doneAtKill int
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if m := doneRe.FindStringSubmatch(get("/readyz")); m != nil {
			doneAtKill, _ = strconv.Atoi(m[1])
		}
		if doneAtKill >= killAt && doneAtKill < n && currentGen() == oldGen {
			break
		}
		if time.Now().After(deadline) || doneAtKill >= n {
			t.Fatalf("no re-embedding between %d and %d documents done seen (last %d, CURRENT %s)", killAt, n, doneAtKill, currentGen())
		}
	}
	kill(fmt.Sprintf("mid-way through the re-embedding (%d of %d documents done)", doneAtKill, n))
	upload(n)
	resumedLog := current().out

	// 3. Killed in the switch: as soon as CURRENT names the new
	// generation.
	restarted := time.Now()
	restart()
	upload(n + 1)
	for deadline := time.Now().Add(3*time.Minute + time.Duration(n)*time.Second); currentGen() == oldGen; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the re-embedded generation was not switched to within 3 minutes of the restart")
		}
	}
	t.Logf("the restarted process switched %.1f s after its start, using %.1f s of CPU", time.Since(restarted).Seconds(), procCPU(current().p.Pid()).Seconds())
	kill("in the switch")
	upload(n + 2)
	// The restarted process continued the killed one's generation: the
	// documents it had re-embedded were kept, not embedded again.
	if resumedLog == current().out {
		t.Fatal("no restart after the kill mid-way")
	}
	kept, documents, ok := reindexKept(current().out.String())
	if !ok {
		t.Fatalf("the restarted process logged no finished re-embedding pass (\"reindex finished\" with rebuild=true)")
	}
	t.Logf("after the kill at %d of %d documents re-embedded, the restarted process re-embedded %d of %d (kept %d)", doneAtKill, n, documents-kept, documents, kept)
	if kept < doneAtKill || documents-kept >= documents {
		t.Errorf("the restarted process kept %d of %d documents, re-embedding %d; want at least the %d the killed one had done kept", kept, documents, documents-kept, doneAtKill)
	}

	// 4. Started again: the re-embedding is over (or done again) and the
	// index complete under the new embedder.
	restart()
	eventually(t, 3*time.Minute, func() error {
		body := get("/readyz")
		if !strings.Contains(body, `"embedder":"use:`) || strings.Contains(body, `"reembedding"`) {
			return fmt.Errorf("/readyz: %s, want the use embedder and no re-embedding", body)
		}
		return nil
	})
	eventually(t, 2*time.Minute, func() error {
		if err := all(fts); err != nil {
			return fmt.Errorf("full text after the switch: %w", err)
		}
		if err := all(vector); err != nil {
			return fmt.Errorf("vector search after the switch: %w", err)
		}
		return nil
	})
	// The generation the switch replaced (its removal was killed) is gone
	// from the disk too.
	if gens, _ := filepath.Glob(filepath.Join(indexDir, "gen-*")); len(gens) != 1 || filepath.Base(gens[0]) != currentGen() {
		t.Errorf("index generations on disk after the restart: %v, want only CURRENT's %s", gens, currentGen())
	}
	close(stop)
	<-searched
	r, err := u.Search(ctx, rest.SearchRequest{Where: vector, Limit: 1})
	if err != nil || r.Reembedding != "" {
		t.Errorf("vector search after the switch: %v, Docrepo-Reembedding %q", err, r.Reembedding)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(failures) > 0 {
		t.Errorf("%d searches failed while the search process was up (%d answered): %v", len(failures), answered, failures[:min(5, len(failures))])
	}
	t.Logf("%d searches answered across the kills; generations: %s before, %s after", answered, oldGen, currentGen())
}

// reindexKept reads the re-embedding pass's end from a search process's
// log: how many documents it went through and how many the new index held
// already at their current revision (kept, not embedded again).
func reindexKept(log string) (kept, documents int, ok bool) {
	for _, line := range strings.Split(log, "\n") {
		var rec struct {
			Msg       string `json:"msg"`
			Rebuild   bool   `json:"rebuild"`
			Documents int    `json:"documents"`
			Kept      int    `json:"kept"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "reindex finished" && rec.Rebuild {
			kept, documents, ok = rec.Kept, rec.Documents, true
		}
	}
	return kept, documents, ok
}

// procCPU is the CPU time (user + system) process pid has used so far.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's closing parenthesis: state is the
	// first, utime and stime the 12th and 13th, in clock ticks (100 a
	// second on Linux).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// milestones are the messages of a search process's log about the
// re-embedding and the index generations, in order.
func milestones(log string) string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		var rec struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		for _, w := range []string{"re-embed", "generation", "rebuild:", "reclaimed"} {
			if strings.Contains(rec.Msg, w) {
				out = append(out, strconv.Quote(rec.Msg))
				break
			}
		}
	}
	return strings.Join(out, "; ")
}
