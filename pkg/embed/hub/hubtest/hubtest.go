// Package hubtest serves a model directory the way a Hugging Face-compatible
// hub does, for tests of model downloads.
package hubtest

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The repository and commit the server answers for.
const (
	Repo   = "acme/tiny-minilm"
	Commit = "0123456789abcdef0123456789abcdef01234567"
)

// Server serves a model directory the way huggingface.co does: a file
// list with LFS sha256s for large files and git blob ids for small ones,
// and resolve URLs; LFS files redirect to a second server (the CDN).
type Server struct {
	t        testing.TB
	Files    map[string][]byte // what the listing describes
	Served   map[string][]byte // what resolve answers (tampering)
	Extra    []string          // names listed that are not files
	mu       sync.Mutex
	Requests []string
	AuthSeen map[string]string // host -> Authorization header seen
	Hub, CDN *httptest.Server
}

// NewServer serves the model directory dir as repository Repo at commit
// Commit (and branch "main").
func NewServer(t testing.TB, dir string) *Server {
	t.Helper()
	h := &Server{t: t, Files: map[string][]byte{}, Served: map[string][]byte{}, AuthSeen: map[string]string{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h.Files[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	h.CDN = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.note(r)
		name := strings.TrimPrefix(r.URL.Path, "/blobs/")
		w.Write(h.body(name))
	}))
	h.Hub = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(func() { h.Hub.Close(); h.CDN.Close() })
	return h
}

func (h *Server) note(r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Requests = append(h.Requests, r.Host+r.URL.RequestURI())
	h.AuthSeen[r.Host] = r.Header.Get("Authorization")
}

func (h *Server) body(name string) []byte {
	if b, ok := h.Served[name]; ok {
		return b
	}
	return h.Files[name]
}

func lfs(name string) bool { return strings.HasSuffix(name, ".safetensors") }

func (h *Server) serve(w http.ResponseWriter, r *http.Request) {
	h.note(r)
	listPrefix := "/api/models/" + Repo + "/revision/"
	resolvePrefix := "/" + Repo + "/resolve/" + Commit + "/"
	switch {
	case strings.HasPrefix(r.URL.Path, listPrefix):
		rev := strings.TrimPrefix(r.URL.Path, listPrefix)
		if rev != Commit && rev != "main" {
			http.Error(w, "Revision Not Found", http.StatusNotFound)
			return
		}
		type lfsInfo struct {
			SHA256 string `json:"sha256"`
			Size   int    `json:"size"`
		}
		type sib struct {
			Name   string   `json:"rfilename"`
			Size   int      `json:"size"`
			BlobID string   `json:"blobId"`
			LFS    *lfsInfo `json:"lfs,omitempty"`
		}
		var sibs []sib
		for name, b := range h.Files {
			s := sib{Name: name, Size: len(b)}
			if lfs(name) {
				sum := sha256.Sum256(b)
				s.LFS = &lfsInfo{SHA256: hex.EncodeToString(sum[:]), Size: len(b)}
				s.BlobID = strings.Repeat("ab", 20) // the pointer's id, not the content's
			} else {
				hh := sha1.New()
				fmt.Fprintf(hh, "blob %d\x00", len(b))
				hh.Write(b)
				s.BlobID = hex.EncodeToString(hh.Sum(nil))
			}
			sibs = append(sibs, s)
		}
		for _, name := range h.Extra {
			sibs = append(sibs, sib{Name: name, Size: 4, BlobID: strings.Repeat("cd", 20)})
		}
		json.NewEncoder(w).Encode(map[string]any{"id": Repo, "sha": Commit, "siblings": sibs})
	case strings.HasPrefix(r.URL.Path, resolvePrefix):
		name := strings.TrimPrefix(r.URL.Path, resolvePrefix)
		if _, ok := h.Files[name]; !ok {
			http.NotFound(w, r)
			return
		}
		if lfs(name) {
			// Another host name for the same address: the CDN is a
			// different host, so the token must not follow.
			http.Redirect(w, r, strings.Replace(h.CDN.URL, "127.0.0.1", "localhost", 1)+"/blobs/"+name, http.StatusFound)
			return
		}
		w.Write(h.body(name))
	default:
		http.NotFound(w, r)
	}
}
