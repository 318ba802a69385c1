package embed

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeServer speaks the OpenAI embeddings protocol. Each input's vector
// encodes the input's length, so tests can check order. Behaviour is tuned
// per test through the fields.
type fakeServer struct {
	dim       int
	reverse   bool // answer data in reverse order (indexes still right)
	status    int  // non-zero: answer this status with an OpenAI error body
	body      string
	dimFor    func(text string) int // overrides dim per input
	dropLast  bool                  // return one embedding too few
	delay     time.Duration
	mu        sync.Mutex
	requests  []embeddingRequest
	authSeen  []string
	pathsSeen []string
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req embeddingRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.authSeen = append(f.authSeen, r.Header.Get("Authorization"))
	f.pathsSeen = append(f.pathsSeen, r.Method+" "+r.URL.Path)
	f.mu.Unlock()
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-r.Context().Done():
			return
		}
	}
	if f.status != 0 {
		w.WriteHeader(f.status)
		_, _ = w.Write([]byte(`{"error":{"message":"model \"x\" not found","type":"invalid_request_error"}}`))
		return
	}
	if f.body != "" {
		_, _ = w.Write([]byte(f.body))
		return
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	var data []item
	for i, text := range req.Input {
		dim := f.dim
		if f.dimFor != nil {
			dim = f.dimFor(text)
		}
		v := make([]float32, dim)
		v[0] = float32(len(text))
		data = append(data, item{Object: "embedding", Index: i, Embedding: v})
	}
	if f.dropLast && len(data) > 0 {
		data = data[:len(data)-1]
	}
	if f.reverse {
		for i, j := 0, len(data)-1; i < j; i, j = i+1, j-1 {
			data[i], data[j] = data[j], data[i]
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model})
}

func newFake(t *testing.T, f *fakeServer) string {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func TestOpenAIBatchesAndOrder(t *testing.T) {
	f := &fakeServer{dim: 8, reverse: true}
	e, err := NewOpenAI(OpenAIConfig{BaseURL: newFake(t, f) + "/", Model: "nomic-embed-text", APIKey: "secret", BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee"}
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(vecs), len(texts))
	}
	for i, v := range vecs {
		if len(v) != 8 || int(v[0]) != len(texts[i]) {
			t.Errorf("vector %d = %v, want the one for %q", i, v, texts[i])
		}
	}
	if e.Dimensions() != 8 {
		t.Errorf("Dimensions = %d, want 8 (learnt from the server)", e.Dimensions())
	}
	if len(f.requests) != 3 {
		t.Errorf("%d requests, want 3 batches of at most 2", len(f.requests))
	}
	for i, req := range f.requests {
		if req.Model != "nomic-embed-text" || req.EncodingFormat != "float" || req.Dimensions != 0 {
			t.Errorf("request %d = %+v", i, req)
		}
		if f.authSeen[i] != "Bearer secret" {
			t.Errorf("request %d Authorization = %q", i, f.authSeen[i])
		}
		if f.pathsSeen[i] != "POST /v1/embeddings" {
			t.Errorf("request %d went to %q", i, f.pathsSeen[i])
		}
	}
}

func TestOpenAISendDimensions(t *testing.T) {
	f := &fakeServer{dim: 4}
	e, err := NewOpenAI(OpenAIConfig{BaseURL: newFake(t, f), Model: "text-embedding-3-small", Dimensions: 4, SendDimensions: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if f.requests[0].Dimensions != 4 || f.authSeen[0] != "" {
		t.Errorf("request = %+v, Authorization %q; want dimensions 4 and no key", f.requests[0], f.authSeen[0])
	}
}

func TestOpenAIErrors(t *testing.T) {
	tests := []struct {
		name    string
		server  *fakeServer
		cfg     OpenAIConfig // BaseURL and Model are filled in
		texts   []string
		wantErr []string // substrings of the error
	}{
		{
			name:    "non-200 with OpenAI error body",
			server:  &fakeServer{status: http.StatusNotFound},
			texts:   []string{"x"},
			wantErr: []string{"404", `model "x" not found`},
		},
		{
			name:    "server error",
			server:  &fakeServer{status: http.StatusInternalServerError},
			texts:   []string{"x"},
			wantErr: []string{"500"},
		},
		{
			name:    "dimension differs from configuration",
			server:  &fakeServer{dim: 5},
			cfg:     OpenAIConfig{Dimensions: 4},
			texts:   []string{"x"},
			wantErr: []string{"5 dimensions", "want 4"},
		},
		{
			name:    "dimensions differ within a response",
			server:  &fakeServer{dimFor: func(s string) int { return 3 + len(s) }},
			texts:   []string{"a", "bb"},
			wantErr: []string{"5 dimensions", "want 4"},
		},
		{
			name:    "too few embeddings",
			server:  &fakeServer{dim: 4, dropLast: true},
			texts:   []string{"a", "b"},
			wantErr: []string{"1 embeddings for 2 inputs"},
		},
		{
			name:    "malformed JSON",
			server:  &fakeServer{body: `{"data": [`},
			texts:   []string{"a"},
			wantErr: []string{"malformed JSON"},
		},
		{
			name:    "repeated index",
			server:  &fakeServer{body: `{"data":[{"index":0,"embedding":[1,2]},{"index":0,"embedding":[3,4]}]}`},
			texts:   []string{"a", "b"},
			wantErr: []string{"repeated index 0"},
		},
		{
			name:    "empty embedding",
			server:  &fakeServer{body: `{"data":[{"index":0,"embedding":[]}]}`},
			texts:   []string{"a"},
			wantErr: []string{"empty embedding"},
		},
		{
			name:    "timeout",
			server:  &fakeServer{dim: 4, delay: time.Minute},
			cfg:     OpenAIConfig{Timeout: 50 * time.Millisecond},
			texts:   []string{"a"},
			wantErr: []string{"deadline exceeded"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.BaseURL, cfg.Model = newFake(t, tc.server), "m"
			e, err := NewOpenAI(cfg)
			if err != nil {
				t.Fatal(err)
			}
			vecs, err := e.Embed(context.Background(), tc.texts)
			if err == nil {
				t.Fatalf("Embed = %v, want an error", vecs)
			}
			if !errors.Is(err, ErrServer) {
				t.Errorf("err = %v, want ErrServer", err)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %q, want it to mention %q", err, want)
				}
			}
		})
	}
}

func TestOpenAICancelled(t *testing.T) {
	// The server would answer after a minute (it stops when the request
	// is cancelled): the bound below is far from both the 50 ms deadline
	// and that minute, so load cannot make the test fail and waiting for
	// the answer still does.
	f := &fakeServer{dim: 4, delay: time.Minute}
	e, err := NewOpenAI(OpenAIConfig{BaseURL: newFake(t, f), Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := e.Embed(ctx, []string{"a"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Embed took %v after its context expired", d)
	}
}

func TestOpenAIEmptyInput(t *testing.T) {
	f := &fakeServer{dim: 4}
	e, err := NewOpenAI(OpenAIConfig{BaseURL: newFake(t, f), Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := e.Embed(context.Background(), nil)
	if err != nil || len(vecs) != 0 {
		t.Errorf("Embed(nil) = %v, %v; want no vectors, no error", vecs, err)
	}
	if len(f.requests) != 0 {
		t.Errorf("%d requests for no input, want 0", len(f.requests))
	}
}
