package bleveengine

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// The child of TestCommonGrowthSurvivesKill: the test binary run again
// with these variables set writes into the index until it is killed.
const (
	commonChildDir   = "DOCREPO_TEST_COMMON_CHILD_DIR"
	commonChildRound = "DOCREPO_TEST_COMMON_CHILD_ROUND"
)

// commonKillRule is the rule of the child and of the checks: C grows
// every few documents, without a cap in reach.
func commonKillRule(t *testing.T) { withCommonRule(t, 10, commonKillWords, 4) }

// commonKillWords is the size of the child's vocabulary. Word i of a Zipf
// draw reaches the rule's 10 documents after about 9·i documents, so C
// still grows after the thousands of documents a fast machine writes in
// the eight rounds. (With 60 words C held them all by round 6 on a quiet
// AVX-512 machine, and round 7, killed after a look that finds terms,
// waited for one in vain.)
const commonKillWords = 1000

// commonKillVocab are the words of the child's documents (zipfWords).
func commonKillVocab() []string {
	var vocab []string
	for i := range commonKillWords {
		vocab = append(vocab, fmt.Sprintf("w%d", i))
	}
	return vocab
}

// TestCommonGrowthSurvivesKill kills (SIGKILL) a process writing
// documents while C grows every few writes, in several rounds on one
// index, at random times and just after a look found new terms (while C
// is recorded, or as the first documents are analysed with it). After
// every kill: C read back from the index extends what it was before and
// what the process last reported, by at most the version being recorded;
// every live document's window pairs are those of the version it records,
// one C holds, analysed from its content; NEAR through the window pairs
// finds what the positions find.
func TestCommonGrowthSurvivesKill(t *testing.T) {
	if dir := os.Getenv(commonChildDir); dir != "" {
		commonKillChild(t, dir)
		return
	}
	commonKillRule(t)
	dir := filepath.Join(t.TempDir(), "idx")
	r := rand.New(rand.NewPCG(31, 32))
	var prev [][]string
	afterLook := 0
	for round := range 8 {
		mode := round % 2 // 0: at a random time; 1: after a look found terms
		reported, looked := runCommonChild(t, dir, round, mode, r)
		if looked {
			afterLook++
		}
		got := readCommonRaw(t, dir)
		for _, before := range []struct {
			what     string
			versions [][]string
		}{{"the previous round's", prev}, {"the last reported", reported}} {
			if len(got) < len(before.versions) || !slices.EqualFunc(got[:len(before.versions)], before.versions, slices.Equal) {
				t.Fatalf("round %d: C read back %q does not extend %s %q", round, got, before.what, before.versions)
			}
		}
		if len(got) > len(reported)+1 {
			t.Fatalf("round %d: C read back %q, more than one version past the reported %q", round, got, reported)
		}
		seen := map[string]bool{}
		for v, terms := range got {
			for _, term := range terms {
				if seen[term] || len(terms) == 0 {
					t.Fatalf("round %d: version %d of %q repeats %q or is empty", round, v+1, got, term)
				}
				seen[term] = true
			}
		}
		docs, versioned := checkCommonIndex(t, dir, got, round)
		t.Logf("round %d (kill %s): C read back at version %d (reported %d), %d live documents, %d with window pairs",
			round, map[bool]string{true: "after a look", false: "at a random time"}[looked], len(got), len(reported), docs, versioned)
		prev = got
	}
	// The test means something only when C grew over the rounds and some
	// kills came just after a look had found terms.
	if len(prev) < 6 || afterLook < 3 {
		t.Fatalf("C %q after the rounds, %d kills after a look found terms", prev, afterLook)
	}
}

// runCommonChild runs the child writing into dir and kills it: after a
// random time (mode 0), or right after a look found terms (mode 1). It
// returns the last C the child reported (durable: reported once recorded)
// and whether the kill followed a look that found terms.
func runCommonChild(t *testing.T, dir string, round, mode int, r *rand.Rand) (reported [][]string, looked bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCommonGrowthSurvivesKill$", "-test.count=1")
	cmd.Env = append(os.Environ(), commonChildDir+"="+dir, commonChildRound+"="+strconv.Itoa(round))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	// Every line is read: a C reported is one recorded.
	read := func(line string) (look bool) {
		kind, rest, _ := strings.Cut(line, " ")
		switch kind {
		case "C":
			reported = nil
			if err := json.Unmarshal([]byte(rest), &reported); err != nil {
				t.Errorf("child: %q: %v", line, err)
			}
		case "look":
			return true
		}
		return false
	}
	// A kill at a random time is timed from the child's first report,
	// made once it has opened (or created) the index: under load a child
	// killed 50 ms after its start could leave no index at all.
	var timer <-chan time.Time
	var after time.Duration
	if mode == 0 {
		after = time.Duration(50+r.IntN(400)) * time.Millisecond
	}
	looks := 1 + r.IntN(3)
	giveUp := time.After(20 * time.Second)
wait:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("round %d: the child ended: %v\n%s", round, cmd.Wait(), stderr.String())
			}
			if mode == 0 && timer == nil {
				timer = time.After(after)
			}
			if read(line) && mode == 1 {
				if looks--; looks == 0 {
					// While C is recorded (a durable write), or as
					// the first documents are written with it.
					time.Sleep(time.Duration(r.IntN(4000)) * time.Microsecond)
					looked = true
					break wait
				}
			}
		case <-timer:
			break wait
		case <-giveUp:
			t.Fatalf("round %d: no look found terms in 20 s\n%s", round, stderr.String())
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for line := range lines {
		read(line)
	}
	_ = cmd.Wait()
	return reported, looked
}

// commonKillChild writes documents into dir until it is killed (or 60 s
// pass), reporting on stdout every C it records ("C <versions>") and
// every look that found terms ("look"); some documents are updated or
// deleted.
func commonKillChild(t *testing.T, dir string) {
	commonKillRule(t)
	round, err := strconv.Atoi(os.Getenv(commonChildRound))
	if err != nil {
		t.Fatal(err)
	}
	commonLooked = func(_ index.IndexReader, _ *commonSet, _ bool, found []string) {
		if len(found) > 0 {
			fmt.Println("look")
		}
	}
	ctx := context.Background()
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	report := func() {
		data, _ := json.Marshal(e.common.Load().versions)
		fmt.Printf("C %s\n", data)
	}
	report()
	r := rand.New(rand.NewPCG(uint64(round), 33))
	text := zipfWords(r, commonKillVocab())
	rev := map[int64]int64{}
	base, next := int64(round)*1_000_000, int64(1)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if next > 1 && r.IntN(8) == 0 {
			id := base + 1 + r.Int64N(next-1)
			rev[id]++
			if err := e.Delete(ctx, id, rev[id]); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var docs []engine.Document
		for range 1 + r.IntN(3) {
			id := base + next
			if next > 1 && r.IntN(4) == 0 {
				id = base + 1 + r.Int64N(next-1)
			} else {
				next++
			}
			rev[id]++
			docs = append(docs, engine.Document{ID: id, Rev: rev[id], Content: text(3 + r.IntN(12))})
		}
		v := e.common.Load().version()
		if _, err := e.Upsert(ctx, docs); err != nil {
			t.Fatal(err)
		}
		if e.common.Load().version() != v {
			report()
		}
	}
}

// readCommonRaw reads C from the index in dir as recorded, before an
// engine's open can grow it.
func readCommonRaw(t *testing.T, dir string) [][]string {
	t.Helper()
	idx, err := bleve.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	c, err := readCommon(idx)
	if err != nil {
		t.Fatal(err)
	}
	return c.versions
}

// checkCommonIndex opens the index in dir, whose C was recorded as
// versions, and checks every live document's window pairs and the NEAR
// searches through them. It returns the number of live documents and of
// those analysed with a version of C.
func checkCommonIndex(t *testing.T, dir string, versions [][]string, round int) (docs, versioned int) {
	t.Helper()
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := e.common.Load().versions; len(got) < len(versions) || !slices.EqualFunc(got[:len(versions)], versions, slices.Equal) {
		t.Fatalf("round %d: opened with C %q, recorded %q", round, got, versions)
	}
	adv, err := e.idx.Advanced()
	if err != nil {
		t.Fatal(err)
	}
	r, err := adv.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	windows, marks := fieldTermsByDoc(t, r, fieldWindow), fieldTermsByDoc(t, r, fieldWindowVer)
	ids, err := e.Revisions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sets := map[int]*commonSet{}
	for id := range ids {
		v := 0
		if m := marks[id]; len(m) > 0 {
			if v, err = strconv.Atoi(m[0]); err != nil || len(m) != 1 || v < 1 || v > len(versions) {
				t.Fatalf("round %d: document %d has versions %q, C has %d", round, id, m, len(versions))
			}
		}
		var want []string
		if v > 0 {
			versioned++
			if sets[v] == nil {
				sets[v] = newCommonSet(versions[:v])
			}
			content, err := storedContent(r, id)
			if err != nil {
				t.Fatal(err)
			}
			for _, tok := range sets[v].window.Analyze([]byte(content)) {
				want = append(want, string(tok.Term))
			}
			slices.Sort(want)
		}
		if got := windows[id]; !slices.Equal(got, want) {
			t.Fatalf("round %d: document %d (version %d): window pairs %q, want %q", round, id, v, got, want)
		}
	}
	ctx := context.Background()
	words := commonKillVocab()[:8]
	for i, a := range words {
		for _, b := range words[i+1:] {
			for _, n := range []int{0, 2, 6, 10} {
				q := fmt.Sprintf(`*N%d"%s %s"`, n, a, b)
				req := engine.Request{Unrestricted: true, Query: queryOf(t, fmt.Sprintf(`{"where": {"fts": {"query": %q}}, "limit": 30}`, q))}
				want, got, werr, gerr := searchOldNew(ctx, e, req, setWindowFirst)
				if werr != nil || gerr != nil {
					t.Fatalf("round %d: %s: %v, %v", round, q, werr, gerr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("round %d: %s:\n got %+v\nwant %+v", round, q, got, want)
				}
			}
		}
	}
	return len(ids), versioned
}

// fieldTermsByDoc returns the terms of field of every live document, by
// document id, sorted.
func fieldTermsByDoc(t *testing.T, r index.IndexReader, field string) map[int64][]string {
	t.Helper()
	dict, err := r.FieldDict(field)
	if err != nil {
		t.Fatal(err)
	}
	defer dict.Close()
	out := map[int64][]string{}
	for {
		de, err := dict.Next()
		if err != nil {
			t.Fatal(err)
		}
		if de == nil {
			break
		}
		tfr, err := r.TermFieldReader(context.Background(), []byte(de.Term), field, false, false, false)
		if err != nil {
			t.Fatal(err)
		}
		for {
			tf, err := tfr.Next(nil)
			if err != nil {
				t.Fatal(err)
			}
			if tf == nil {
				break
			}
			ext, err := r.ExternalID(tf.ID)
			if err != nil {
				t.Fatal(err)
			}
			id, err := parseDocID(ext)
			if err != nil {
				t.Fatal(err)
			}
			out[id] = append(out[id], de.Term)
		}
		tfr.Close()
	}
	for _, terms := range out {
		slices.Sort(terms)
	}
	return out
}
