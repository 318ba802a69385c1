package embed

import (
	"context"
	"fmt"
)

// Identity says which embedder wrote a vector, so that an index can
// record it and refuse, or re-embed, when a different one starts.
// Vectors are comparable when Kind, Version and Dimensions agree.
type Identity struct {
	// Kind is "hash", "openai" or "local".
	Kind string `json:"kind"`
	// Model names the model: "hash", the server's model name, or the
	// local model directory's name.
	Model string `json:"model"`
	// Version changes whenever the vectors would: for hash the
	// algorithm version, for local a digest of the weights, tokenizer,
	// pooling, passage prefix and window; for openai it is empty (the
	// server does not say which weights it runs).
	Version string `json:"version,omitempty"`
	// Dimensions is the vector length (0 for openai before its first
	// answer when not configured).
	Dimensions int `json:"dimensions"`
}

// Compatible reports whether vectors written by id and by o can be
// compared: the same kind, version and dimensions, and, for an embedder
// without a version (openai), the same model. (A local model's name is
// its directory's, which may differ between machines holding the same
// weights; its version digests the weights.)
func (id Identity) Compatible(o Identity) bool {
	if id.Kind != o.Kind || id.Version != o.Version || id.Dimensions != o.Dimensions {
		return false
	}
	return id.Version != "" || id.Model == o.Model
}

// String is a compact form for logs: kind:model@version/dimensions.
func (id Identity) String() string {
	s := id.Kind + ":" + id.Model
	if id.Version != "" {
		s += "@" + id.Version
	}
	return fmt.Sprintf("%s/%d", s, id.Dimensions)
}

// Identifier is implemented by embedders that report an Identity; every
// embedder of this package does.
type Identifier interface {
	Identity() Identity
}

// IdentityOf returns e's identity, or one made of its name and
// dimensions for an embedder that does not report one.
func IdentityOf(e Embedder) Identity {
	if i, ok := e.(Identifier); ok {
		return i.Identity()
	}
	return Identity{Model: e.Name(), Dimensions: e.Dimensions()}
}

// QueryEmbedder is implemented by embedders whose model embeds search
// queries differently from documents (e5 models want "query: " before a
// query and "passage: " before a document).
type QueryEmbedder interface {
	EmbedQueries(ctx context.Context, queries []string) ([][]float32, error)
}

// EmbedQueries embeds search queries with e: through EmbedQueries where
// e has it, else with Embed.
func EmbedQueries(ctx context.Context, e Embedder, queries []string) ([][]float32, error) {
	if q, ok := e.(QueryEmbedder); ok {
		return q.EmbedQueries(ctx, queries)
	}
	return e.Embed(ctx, queries)
}

// MetadataEmbedder is implemented by embedders that embed a document's
// metadata text (engine.MetadataText) differently from its content: the
// use embedder gives it only its lexical half, so that the write path,
// where metadata vectors are made, runs no sentence encoder.
type MetadataEmbedder interface {
	EmbedMetadata(ctx context.Context, texts []string) ([][]float32, error)
}

// Metadata embeds metadata texts with e: through EmbedMetadata where e
// has it, else with Embed.
func Metadata(ctx context.Context, e Embedder, texts []string) ([][]float32, error) {
	if m, ok := e.(MetadataEmbedder); ok {
		return m.EmbedMetadata(ctx, texts)
	}
	return e.Embed(ctx, texts)
}
