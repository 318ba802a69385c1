package indexing

import (
	"context"
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
	}{
		{name: "default is hash", env: map[string]string{}, wantKind: embed.KindHash, wantDim: embed.DefaultHashDimensions},
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
			var s Settings
			l := config.New("test", func(k string) string { return tc.env[k] })
			s.RegisterEmbedder(l)
			if err := l.Parse(nil); err != nil {
				t.Fatal(err)
			}
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
