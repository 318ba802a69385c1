package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/docrepo/docrepo/pkg/auth"
	rest "github.com/docrepo/docrepo/pkg/client"
	searchv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/search/v1"
	"github.com/docrepo/docrepo/pkg/grpcclient"
	"github.com/docrepo/docrepo/pkg/launcher"
)

// TestSearchEmbedderSwitchKeepsAnswering switches a live index from the
// hash embedder to the default, use (issue 20 item 5, at small scale): a
// search service builds its own index with hash; a second one starts on
// it under use with DOCREPO_EMBEDDER_CHANGE=rebuild. While it re-embeds
// full-text and vector searches answer and find the documents (vector
// queries embedded with hash, the embedder of the index still in use),
// each answer saying so in its docrepo-reembedding header, and /readyz
// shows the re-embedding's progress; afterwards /readyz names use, every
// document was re-embedded, and vector search finds the documents with
// the new vectors, without the header; a document uploaded during the
// re-embedding (consumed from the stack's events) is found by a vector
// search restricted to it right after the switch.
func TestSearchEmbedderSwitchKeepsAnswering(t *testing.T) {
	t.Parallel()
	modelDir := os.Getenv("DOCREPO_USE_MODEL_DIR")
	if modelDir == "" {
		if os.Getenv("DOCREPO_TEST_STRICT") == "1" {
			t.Fatal("DOCREPO_USE_MODEL_DIR is not set (make test sets it to deploy/dev/model.sh's directory)")
		}
		t.Skip("DOCREPO_USE_MODEL_DIR is not set: no sentence encoder to switch to")
	}
	u := newDocUser(t)
	// Enough text that re-embedding with the sentence encoder takes a
	// while (some seconds: three passages of 128 pieces a document).
	var docs []int64
	for i := range 60 {
		var b strings.Builder
		fmt.Fprintf(&b, "switchling%d the numbat eats termites in the eucalypt woodland, report %d.", i, i)
		for j := 0; b.Len() < 1200; j++ {
			fmt.Fprintf(&b, " Field note %d of survey %d: the colony moved along the creek bed, and the rangers counted the burrows again after the rain.", j, i)
		}
		docs = append(docs, u.uploadText(fmt.Sprintf("s%d.txt", i), b.String()))
	}
	u.waitIndexed(docs[len(docs)-1])
	env, err := searchEnv(context.Background(), stk)
	if err != nil {
		t.Fatal(err)
	}
	env = append(env, "OPENSEARCH_URL=", "NATS_URL=", "DOCREPO_INDEX_DIR="+t.TempDir(), "DOCREPO_LOG_LEVEL=info")
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+u.token)
	admin := newService(t, auth.ScopeAdmin)
	actx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+admin.token)

	type service struct {
		addr, metrics string
		p             *launcher.Process
		out           *syncBuffer
	}
	// start starts a search service listening on addr ("": a free one).
	start := func(addr string, extra ...string) service {
		t.Helper()
		s := service{addr: addr}
		if s.addr == "" {
			if s.addr, err = launcher.FreeAddr(); err != nil {
				t.Fatal(err)
			}
		}
		if s.metrics, err = launcher.FreeAddr(); err != nil {
			t.Fatal(err)
		}
		s.out = &syncBuffer{}
		all := append(append(append(stk.commonEnv(), env...), extra...), "DOCREPO_GRPC_ADDR="+s.addr, "DOCREPO_METRICS_ADDR="+s.metrics)
		if s.p, err = launcher.Start(launcher.Spec{Name: "search", Path: binaries["search"], Env: all, Output: s.out}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.p.Stop(30 * time.Second) })
		if err := launcher.WaitTCP(context.Background(), s.p, s.addr, 2*time.Minute); err != nil {
			t.Fatalf("search service: %v\n%s", err, s.out.String())
		}
		return s
	}
	// searchMD asks a service for the user's documents matching where,
	// with the answer's re-embedding header ("" without one).
	searchMD := func(addr string, where map[string]any) ([]int64, string, error) {
		conn, err := grpcclient.Dial(addr)
		if err != nil {
			return nil, "", err
		}
		defer conn.Close()
		w, _ := structpb.NewStruct(where)
		var md metadata.MD
		resp, err := searchv1.NewSearchServiceClient(conn).Search(ctx, &searchv1.SearchRequest{Where: w, Limit: proto.Int32(100)}, grpc.Header(&md))
		if err != nil {
			return nil, "", err
		}
		var ids []int64
		for _, r := range resp.GetResults() {
			ids = append(ids, int64(r.GetFields()["id"].GetNumberValue()))
		}
		return ids, strings.Join(md.Get("docrepo-reembedding"), ","), nil
	}
	search := func(addr string, where map[string]any) ([]int64, error) {
		ids, _, err := searchMD(addr, where)
		return ids, err
	}
	readyz := func(s service) string {
		resp, err := http.Get("http://" + s.metrics + "/readyz")
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	fts := map[string]any{"fts": map[string]any{"field": "content", "query": "switchling0"}}
	vector := map[string]any{"vector": map[string]any{"target": "content", "query": "numbat termites eucalypt woodland"}}
	metric := func(s service, name string) float64 {
		resp, err := http.Get("http://" + s.metrics + "/metrics")
		if err != nil {
			return -1
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		for _, line := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
				return f
			}
		}
		return -1
	}
	// found reports whether ids hold all of want.
	found := func(ids []int64, want ...int64) bool {
		n := 0
		for _, id := range ids {
			for _, w := range want {
				if id == w {
					n++
				}
			}
		}
		return n == len(want)
	}

	// 1. The index, built with hash.
	first := start("", "DOCREPO_EMBEDDER=hash")
	eventually(t, 60*time.Second, func() error { return reindexAll(actx, first.addr) })
	if ids, err := search(first.addr, vector); err != nil || !found(ids, docs...) {
		t.Fatalf("vector search with hash: %v, %v", ids, err)
	}
	if err := first.p.Stop(30 * time.Second); err != nil {
		t.Fatalf("stopping the hash service: %v", err)
	}

	// 2. The same index under use, rebuilt online, behind a gateway of
	// its own as well (started first: it connects when asked).
	secondAddr, err := launcher.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	gw := startVariantCalling(t, []string{"gateway"}, map[string]string{"search": secondAddr})
	api, err := rest.New(gw.URL(), u.token, rest.Options{Retry: rest.NoRetry})
	if err != nil {
		t.Fatal(err)
	}
	// It consumes the stack's document events (a durable of its own), so
	// that an upload during the re-embedding reaches it.
	natsURL := ""
	for _, kv := range stk.commonEnv() {
		if v, ok := strings.CutPrefix(kv, "NATS_URL="); ok {
			natsURL = v
		}
	}
	if natsURL == "" {
		t.Fatal("the stack's environment has no NATS_URL")
	}
	second := start(secondAddr, "DOCREPO_EMBEDDER=use", "DOCREPO_USE_MODEL_DIR="+modelDir, "DOCREPO_EMBEDDER_CHANGE=rebuild",
		"NATS_URL="+natsURL, "DOCREPO_INDEX_CONSUMER="+uniq("e2e-switch"))
	// late is uploaded once the re-embedding is seen; lateIndexed says
	// that full-text search found it before the switch.
	const lateText = "switchlate: the quokka smiled at the ferry passengers arriving on Rottnest island."
	var late int64
	lateIndexed := false
	// restDuring counts REST vector searches answered during the
	// re-embedding, which say so in Docrepo-Reembedding.
	restDuring := 0
	var ftsDuring, vectorDuring int
	var readyDuring string
	hashID := "hash:hash@v1/768"
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ids, header, err := searchMD(second.addr, fts)
		if err != nil || !found(ids, docs[0]) {
			t.Fatalf("full-text search while re-embedding (header %q): %v, %v", header, ids, err)
		}
		if header != "" {
			ftsDuring++
			if r := readyz(second); readyDuring == "" && strings.Contains(r, `"reembedding"`) {
				readyDuring = r
			}
		}
		ids, header, err = searchMD(second.addr, vector)
		if err != nil {
			t.Fatalf("vector search while re-embedding (after %d answered during it): %v", vectorDuring, err)
		}
		if !found(ids, docs...) {
			t.Fatalf("vector search (header %q) found %v, want all %d documents", header, ids, len(docs))
		}
		if header == "" {
			break // the re-embedded index is in use
		}
		if header != hashID {
			t.Fatalf("vector search during the re-embedding: header %q, want the index's embedder %s", header, hashID)
		}
		vectorDuring++
		if late == 0 {
			late = u.uploadText("late.txt", lateText)
		} else if !lateIndexed {
			ids, header, err := searchMD(second.addr, map[string]any{"fts": map[string]any{"field": "content", "query": "switchlate"}})
			lateIndexed = err == nil && found(ids, late) && header != ""
		}
		// The same through the gateway (which may still be connecting:
		// a 503 then is the gateway's, not the re-embedding's).
		res, err := api.Search(context.Background(), rest.SearchRequest{Where: vector, Limit: 100})
		var apiErr *rest.Error
		switch {
		case errors.As(err, &apiErr) && apiErr.Status == http.StatusServiceUnavailable && restDuring == 0:
		case err != nil:
			t.Fatalf("REST vector search during the re-embedding: %v", err)
		case res.Reembedding == hashID && found(res.IDs(), docs...):
			restDuring++
		case res.Reembedding != "":
			t.Fatalf("REST vector search during the re-embedding: Docrepo-Reembedding %q, %v; want %s and all %d documents", res.Reembedding, res.IDs(), hashID, len(docs))
		}
		if time.Now().After(deadline) {
			t.Fatalf("the re-embedded index was not in use within 3 minutes\n%s", second.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ftsDuring == 0 || vectorDuring == 0 || restDuring == 0 {
		t.Errorf("no search met the re-embedding (full text answered during it %d times, vector %d times, through the gateway %d): the test saw no switch",
			ftsDuring, vectorDuring, restDuring)
	}
	// Right after the switch, the document uploaded during the
	// re-embedding has its vectors under the new embedder: a vector
	// search restricted to it finds it.
	if late != 0 {
		only := map[string]any{"and": []any{
			map[string]any{"vector": map[string]any{"target": "content", "query": "quokka on Rottnest island greets the ferry"}},
			map[string]any{"in": map[string]any{"field": "id", "value": []any{late}}},
		}}
		ids, header, err := searchMD(second.addr, only)
		switch {
		case err != nil:
			t.Errorf("vector search for the document uploaded during the re-embedding, right after the switch: %v", err)
		case header != "":
			t.Errorf("vector search right after the switch still says Docrepo-Reembedding %q", header)
		case lateIndexed && !found(ids, late):
			t.Errorf("right after the switch, vector search restricted to document %d (uploaded during the re-embedding, text-indexed before the switch) found %v: it has no vectors in the new index", late, ids)
		case !lateIndexed:
			t.Logf("document %d uploaded during the re-embedding was not found by full text before the switch (found by vector right after it: %v)", late, found(ids, late))
		}
	}
	if res, err := api.Search(context.Background(), rest.SearchRequest{Where: vector, Limit: 100}); err != nil {
		t.Errorf("REST vector search after the switch: %v", err)
	} else if res.Reembedding != "" || !found(res.IDs(), docs...) {
		t.Errorf("REST vector search after the switch: Docrepo-Reembedding %q, %v; want all documents and no header", res.Reembedding, res.IDs())
	}
	for _, want := range []string{`"running":true`, `"index_embedder":"` + hashID + `"`, `"vector_search":"previous embedder"`, `"total":`} {
		if ftsDuring > 0 && !strings.Contains(readyDuring, want) {
			t.Errorf("/readyz during the re-embedding: %s, want %s", readyDuring, want)
		}
	}
	// The switch is followed by a verification of the new index; then
	// the re-embedding is over.
	eventually(t, 60*time.Second, func() error {
		if body := readyz(second); strings.Contains(body, `"reembedding"`) {
			return fmt.Errorf("/readyz after the switch: %s", body)
		}
		return nil
	})
	done, total := metric(second, "docrepo_indexer_reembed_done"), metric(second, "docrepo_indexer_reembed_total")
	if total < float64(len(docs)) || done != total {
		t.Errorf("re-embedded %v of %v documents, want all (at least the test's %d)", done, total, len(docs))
	}
	if body := readyz(second); !strings.Contains(body, `"embedder":"use:`) || strings.Contains(body, `"reembedding"`) {
		t.Errorf("/readyz after the switch: %s, want the use embedder and no re-embedding", body)
	}
	for _, want := range []string{"re-embedding the index", "the index is re-embedded"} {
		if !strings.Contains(second.out.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, second.out.String())
		}
	}
	t.Logf("during the re-embedding: full-text searches %d, vector searches %d answered with hash (%d through the gateway); re-embedded %v documents; "+
		"document %d uploaded during it, text-indexed before the switch: %v", ftsDuring, vectorDuring, restDuring, done, late, lateIndexed)
	for _, line := range strings.Split(second.out.String(), "\n") {
		if strings.Contains(line, "written during the rebuild") || strings.Contains(line, "writes made during the rebuild") {
			t.Log(line)
		}
	}
}
