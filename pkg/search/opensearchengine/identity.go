package opensearchengine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/docrepo/docrepo/pkg/embed"
)

// embedderTTL is how long Embedder trusts what it last read: the search
// service asks before every vector search, and another process (the
// indexer) may record a new embedder when it rebuilds the index.
const embedderTTL = 5 * time.Second

// embedderCache is the last embedder identity read or written.
type embedderCache struct {
	id   embed.Identity
	ok   bool
	read time.Time
}

// Embedder implements engine.Engine: the identity in the mapping's
// _meta.docrepo_embedder (IndexBody writes it when Config.Embedder is
// set; SetEmbedder updates it), read at most every few seconds. Behind
// an alias, every index must record the same one.
func (e *Engine) Embedder(ctx context.Context) (embed.Identity, bool, error) {
	if err := e.check(); err != nil {
		return embed.Identity{}, false, err
	}
	e.embMu.Lock()
	c := e.emb
	e.embMu.Unlock()
	if !c.read.IsZero() && time.Since(c.read) < embedderTTL {
		return c.id, c.ok, nil
	}
	path := e.indexPath("/_mapping")
	res, err := e.c.do(ctx, http.MethodGet, path, nil, nil, "")
	if err != nil {
		return embed.Identity{}, false, err
	}
	if res.Status != http.StatusOK {
		return embed.Identity{}, false, newResponseError(http.MethodGet, path, res.Status, res.Body)
	}
	id, ok, err := embedderOfMapping(res.Body)
	if err != nil {
		return embed.Identity{}, false, fmt.Errorf("opensearchengine: %s: %w", e.cfg.Index, err)
	}
	e.embMu.Lock()
	e.emb = embedderCache{id: id, ok: ok, read: time.Now()}
	e.embMu.Unlock()
	return id, ok, nil
}

// embedderOfMapping reads the embedder identity of a GET _mapping answer.
func embedderOfMapping(body []byte) (embed.Identity, bool, error) {
	var m map[string]struct {
		Mappings struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"mappings"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return embed.Identity{}, false, fmt.Errorf("decoding the mapping: %w", err)
	}
	var (
		first  embed.Identity
		seen   bool
		anyRec bool
	)
	for index, im := range m {
		var id embed.Identity
		raw, ok := im.Mappings.Meta[metaEmbedder]
		if ok {
			if err := json.Unmarshal(raw, &id); err != nil {
				return embed.Identity{}, false, fmt.Errorf("index %s: _meta.%s: %w", index, metaEmbedder, err)
			}
		}
		if seen && (ok != anyRec || id != first) {
			return embed.Identity{}, false, fmt.Errorf("the indexes behind the name record different embedders (%v, %v)", first, id)
		}
		first, seen, anyRec = id, true, ok
	}
	return first, anyRec, nil
}

// SetEmbedder implements engine.Engine: it writes the identity into the
// mapping's _meta (the put-mapping API; behind an alias, into every index
// of it).
func (e *Engine) SetEmbedder(ctx context.Context, id embed.Identity) error {
	if err := e.check(); err != nil {
		return err
	}
	path := e.indexPath("/_mapping")
	res, err := e.c.doJSON(ctx, http.MethodPut, path, nil, obj{"_meta": obj{metaEmbedder: id}})
	if err != nil {
		return err
	}
	if res.Status != http.StatusOK {
		return newResponseError(http.MethodPut, path, res.Status, res.Body)
	}
	e.embMu.Lock()
	e.emb = embedderCache{id: id, ok: true, read: time.Now()}
	e.embMu.Unlock()
	return nil
}

// forgetEmbedder drops the cached identity, so that the next Embedder
// reads the mapping.
func (e *Engine) forgetEmbedder() {
	e.embMu.Lock()
	e.emb = embedderCache{}
	e.embMu.Unlock()
}
