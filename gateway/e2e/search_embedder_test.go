package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/docrepo/docrepo/pkg/auth"
	indexerv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/indexer/v1"
	searchv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/search/v1"
	"github.com/docrepo/docrepo/pkg/grpcclient"
	"github.com/docrepo/docrepo/pkg/launcher"
)

// syncBuffer collects a process's output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSearchEmbedderChange starts search services, one after the other,
// on one embedded index that nothing but reindex writes: built with the
// hash embedder of 768 dimensions, it refuses to serve a service embedding
// with 256 (the process exits naming both embedders and the fixes);
// with DOCREPO_EMBEDDER_CHANGE=rebuild such a service starts and
// re-embeds the index, after which vector search finds the documents
// again; and a service with the same embedder then starts as usual.
func TestSearchEmbedderChange(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	doc := u.uploadText("e.txt", "the numbat eats termites in the eucalypt woodland")
	u.waitIndexed(doc)
	env, err := searchEnv(context.Background(), stk)
	if err != nil {
		t.Fatal(err)
	}
	// The hash embedder explicitly: the test is about changing embedders,
	// and names hash identities (the default, use, is hash only without
	// its model).
	env = append(env, "OPENSEARCH_URL=", "NATS_URL=", "DOCREPO_INDEX_DIR="+t.TempDir(), "DOCREPO_LOG_LEVEL=info", "DOCREPO_EMBEDDER=hash")
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+u.token)
	admin := newService(t, auth.ScopeAdmin)
	actx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+admin.token)

	// start runs a search service with extra settings; it returns its
	// address, the process and its output.
	start := func(extra ...string) (string, *launcher.Process, *syncBuffer) {
		t.Helper()
		addr, err := launcher.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		metrics, err := launcher.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		out := &syncBuffer{}
		all := append(append(append(stk.commonEnv(), env...), extra...), "DOCREPO_GRPC_ADDR="+addr, "DOCREPO_METRICS_ADDR="+metrics)
		p, err := launcher.Start(launcher.Spec{Name: "search", Path: binaries["search"], Env: all, Output: out})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Stop(30 * time.Second) })
		return addr, p, out
	}
	// vectorSearch asks a service for the documents near "numbat termites".
	vectorSearch := func(addr string) ([]int64, error) {
		conn, err := grpcclient.Dial(addr)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		where, _ := structpb.NewStruct(map[string]any{"vector": map[string]any{"target": "content", "query": "numbat termites"}})
		resp, err := searchv1.NewSearchServiceClient(conn).Search(ctx, &searchv1.SearchRequest{Where: where})
		if err != nil {
			return nil, err
		}
		var ids []int64
		for _, r := range resp.GetResults() {
			ids = append(ids, int64(r.GetFields()["id"].GetNumberValue()))
		}
		return ids, nil
	}
	found := func(ids []int64) bool {
		for _, id := range ids {
			if id == doc {
				return true
			}
		}
		return false
	}

	// 1. The index is built with the default embedder (hash, 768).
	addr, first, _ := start()
	eventually(t, 60*time.Second, func() error { return reindexAll(actx, addr) })
	eventually(t, 30*time.Second, func() error {
		ids, err := vectorSearch(addr)
		if err == nil && !found(ids) {
			err = fmt.Errorf("vector search found %v", ids)
		}
		return err
	})
	if err := first.Stop(30 * time.Second); err != nil {
		t.Fatalf("stopping the first service: %v", err)
	}

	// 2. Another embedder is refused: the process exits, naming both.
	_, refused, out := start("DOCREPO_EMBEDDER_DIMENSIONS=256")
	select {
	case <-refused.Done():
	case <-time.After(60 * time.Second):
		t.Fatal("a search service with another embedder kept running over the index")
	}
	if refused.Err() == nil {
		t.Error("the refused service exited successfully")
	}
	for _, want := range []string{"hash:hash@v1/768", "hash:hash@v1/256", "DOCREPO_EMBEDDER_CHANGE=rebuild"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the refusal does not name %q:\n%s", want, out.String())
		}
	}

	// 3. With DOCREPO_EMBEDDER_CHANGE=rebuild it starts and re-embeds;
	// vector search keeps answering meanwhile (from the old index, with
	// queries embedded by its embedder) and finds the document, before
	// and after the re-embedding, which the log reports as done.
	addr, second, out := start("DOCREPO_EMBEDDER_DIMENSIONS=256", "DOCREPO_EMBEDDER_CHANGE=rebuild")
	eventually(t, 60*time.Second, func() error {
		ids, err := vectorSearch(addr)
		if err != nil && status.Code(err) != codes.Unavailable {
			t.Fatalf("vector search while re-embedding: %v", err)
		}
		if err == nil && !found(ids) {
			return fmt.Errorf("vector search found %v, not %d", ids, doc)
		}
		if err == nil && !strings.Contains(out.String(), "the index is re-embedded") {
			err = errors.New("the re-embedding is not logged as done yet")
		}
		return err
	})
	if err := second.Stop(30 * time.Second); err != nil {
		t.Fatalf("stopping the second service: %v", err)
	}

	// 4. The same embedder again: it starts and serves.
	addr, _, _ = start("DOCREPO_EMBEDDER_DIMENSIONS=256")
	eventually(t, 60*time.Second, func() error {
		ids, err := vectorSearch(addr)
		if err == nil && !found(ids) {
			err = fmt.Errorf("vector search found %v", ids)
		}
		return err
	})
}

// reindexAll runs a full reindex through the search service at addr (the
// Reindex RPC, as docrepoctl reindex does) and returns when it reports
// finished.
func reindexAll(ctx context.Context, addr string) error {
	conn, err := grpcclient.Dial(addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	s, err := indexerv1.NewIndexerServiceClient(conn).Reindex(ctx, &indexerv1.ReindexRequest{})
	if err != nil {
		return err
	}
	for {
		p, err := s.Recv()
		if err != nil {
			return err
		}
		if p.GetFinished() {
			return nil
		}
	}
}
