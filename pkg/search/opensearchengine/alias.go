package opensearchengine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// Versioned indexes behind an alias. Config.Index names an alias; the
// documents live in a concrete index <alias>-v<N> it points at, and every
// read and write goes through the alias. A full rebuild (NewGeneration)
// creates <alias>-v<N+1>, fills it while searches and live writes go on
// through the alias to the current index, and Commit moves the alias in one
// POST /_aliases (remove from the old index, add to the new one), then
// deletes the old index. Until that call the alias stays on the old,
// complete index, so a rebuild that fails or crashes changes nothing that
// searches see; the index it leaves behind is deleted by the next rebuild.
//
// An index made before versioned indexes is a concrete index named
// Config.Index itself. It stays in use as it is; the first rebuild
// (docrepoctl reindex -recreate) replaces it with <alias>-v1 behind the
// alias, deleting it in the same atomic call (remove_index + add).

// versionedName is the concrete index of version n behind alias.
func versionedName(alias string, n int) string { return alias + "-v" + strconv.Itoa(n) }

// versionOf returns n when index is versionedName(alias, n).
func versionOf(alias, index string) (int, bool) {
	rest, ok := strings.CutPrefix(index, alias+"-v")
	if !ok || rest == "" || strings.Trim(rest, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n <= 0 || versionedName(alias, n) != index {
		return 0, false
	}
	return n, true
}

// lookup returns the concrete indexes behind name (itself when it is an
// index, those it points at when it is an alias; sorted) and their
// mappings, or nil when nothing has that name.
func (e *Engine) lookup(ctx context.Context, name string) ([]string, []byte, error) {
	path := "/" + name + "/_mapping"
	res, err := e.c.do(ctx, http.MethodGet, path, nil, nil, "")
	if err != nil {
		return nil, nil, err
	}
	switch res.Status {
	case http.StatusOK:
	case http.StatusNotFound:
		return nil, nil, nil
	default:
		return nil, nil, newResponseError(http.MethodGet, path, res.Status, res.Body)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(res.Body, &m); err != nil {
		return nil, nil, fmt.Errorf("opensearchengine: GET %s: %w", path, err)
	}
	if len(m) == 0 {
		return nil, nil, fmt.Errorf("opensearchengine: GET %s: no index in the answer", path)
	}
	indexes := make([]string, 0, len(m))
	for k := range m {
		indexes = append(indexes, k)
	}
	slices.Sort(indexes)
	return indexes, res.Body, nil
}

// ensureIndex makes sure Config.Index exists. When nothing has that name
// it creates <alias>-v1 with the mapping and the alias in one request
// (createFirst); otherwise it checks the vector dimensions of the indexes
// behind the name. A concrete index named Config.Index (made before
// versioned indexes) is used as it is.
func (e *Engine) ensureIndex(ctx context.Context) error {
	for attempt := range 2 {
		behind, body, err := e.lookup(ctx, e.cfg.Index)
		if err != nil {
			return err
		}
		if behind != nil {
			if err := e.checkMapping(body); err != nil {
				return err
			}
			if slices.Equal(behind, []string{e.cfg.Index}) {
				e.log.Info("opensearch: the index is a concrete index made before versioned indexes; it stays in use, "+
					"and docrepoctl reindex -recreate rebuilds it behind an alias without downtime",
					"index", e.cfg.Index, "rebuilt_into", versionedName(e.cfg.Index, 1))
			}
			return nil
		}
		if attempt > 0 {
			break
		}
		created, err := e.createFirst(ctx)
		if err != nil || created {
			return err
		}
	}
	first := versionedName(e.cfg.Index, 1)
	return fmt.Errorf("opensearchengine: index %s exists but the alias %s does not: point the alias at it (POST /_aliases) or delete it", first, e.cfg.Index)
}

// createFirst creates <alias>-v1 with the alias. It reports false when
// something took the names meanwhile (another docrepo process creating the
// same, or an index named like the alias): the caller looks again.
func (e *Engine) createFirst(ctx context.Context) (bool, error) {
	index := versionedName(e.cfg.Index, 1)
	body := IndexBody(e.cfg)
	body["aliases"] = obj{e.cfg.Index: obj{}}
	path := "/" + index
	res, err := e.c.doJSON(ctx, http.MethodPut, path, nil, body)
	if err != nil {
		return false, err
	}
	if res.Status == http.StatusOK {
		e.log.Info("opensearch: created the index and its alias", "index", index, "alias", e.cfg.Index)
		return true, nil
	}
	rerr := newResponseError(http.MethodPut, path, res.Status, res.Body)
	switch rerr.Type {
	case "resource_already_exists_exception", "invalid_alias_name_exception":
		return false, nil
	}
	return false, rerr
}

// versions returns the versioned indexes behind alias that exist, by name.
func (e *Engine) versions(ctx context.Context) (map[string]int, error) {
	path := "/" + e.cfg.Index + "-v*/_alias"
	res, err := e.c.do(ctx, http.MethodGet, path, url.Values{"expand_wildcards": {"all"}}, nil, "")
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	switch res.Status {
	case http.StatusOK:
	case http.StatusNotFound:
		return out, nil
	default:
		return nil, newResponseError(http.MethodGet, path, res.Status, res.Body)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(res.Body, &m); err != nil {
		return nil, fmt.Errorf("opensearchengine: GET %s: %w", path, err)
	}
	for index := range m {
		if n, ok := versionOf(e.cfg.Index, index); ok {
			out[index] = n
		}
	}
	return out, nil
}

// deleteIndex deletes a concrete index; a missing one is not an error.
func (e *Engine) deleteIndex(ctx context.Context, index string) error {
	path := "/" + index
	res, err := e.c.do(ctx, http.MethodDelete, path, nil, nil, "")
	if err != nil {
		return err
	}
	if res.Status != http.StatusOK && res.Status != http.StatusNotFound {
		return newResponseError(http.MethodDelete, path, res.Status, res.Body)
	}
	return nil
}

// Generation is a new versioned index being built by a full rebuild: its
// Engine writes into it, Commit moves the alias to it, Abandon deletes it.
// It satisfies indexing.Target. A Generation is used by one goroutine.
type Generation struct {
	parent *Engine
	eng    *Engine
	// index is the new index; old the one the alias pointed at when the
	// generation was made (Config.Index itself for an index made before
	// versioned indexes: legacy).
	index, old string
	legacy     bool
	committed  bool
}

// NewGeneration starts a full rebuild: it deletes the versioned indexes the
// alias does not point at (left by a rebuild that never finished), then
// creates the next version, empty, with the engine's mapping. Searches and
// writes through the engine keep using the current index until Commit.
//
// Two rebuilds must not run at once: the second deletes the first one's
// index as unfinished (the first then fails at Commit, changing nothing).
func (e *Engine) NewGeneration(ctx context.Context) (*Generation, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	if e.generation {
		return nil, fmt.Errorf("opensearchengine: %s is a rebuild's new index, not an alias", e.cfg.Index)
	}
	alias := e.cfg.Index
	behind, _, err := e.lookup(ctx, alias)
	if err != nil {
		return nil, err
	}
	switch len(behind) {
	case 0:
		return nil, fmt.Errorf("opensearchengine: rebuild: %s does not exist", alias)
	case 1:
	default:
		return nil, fmt.Errorf("opensearchengine: rebuild: the alias %s points at %d indexes (%s); it must point at one",
			alias, len(behind), strings.Join(behind, ", "))
	}
	g := &Generation{parent: e, old: behind[0], legacy: behind[0] == alias}
	versions, err := e.versions(ctx)
	if err != nil {
		return nil, err
	}
	next := 1
	for index, n := range versions {
		next = max(next, n+1)
		if index == g.old {
			continue
		}
		e.log.Warn("opensearch rebuild: deleting an index the alias does not point at (left by a rebuild that never finished)",
			"index", index, "alias", alias)
		if err := e.deleteIndex(ctx, index); err != nil {
			return nil, fmt.Errorf("opensearchengine: rebuild: deleting the unfinished index %s: %w", index, err)
		}
	}
	g.index = versionedName(alias, next)
	path := "/" + g.index
	res, err := e.c.doJSON(ctx, http.MethodPut, path, nil, IndexBody(e.cfg))
	if err != nil {
		return nil, err
	}
	if res.Status != http.StatusOK {
		return nil, fmt.Errorf("opensearchengine: rebuild: %w", newResponseError(http.MethodPut, path, res.Status, res.Body))
	}
	cfg := e.cfg
	cfg.Index = g.index
	g.eng = &Engine{cfg: cfg, c: e.c, dims: e.dims, log: e.log, generation: true, meanRecount: e.meanRecount}
	e.log.Info("opensearch rebuild: created the new index; searches use the current one until the switch",
		"index", g.index, "alias", alias, "current", g.old)
	return g, nil
}

// Index returns the name of the new index.
func (g *Generation) Index() string { return g.index }

// Engine returns an engine writing to the new index itself (not through
// the alias). Closing it leaves the parent engine's connection open.
func (g *Generation) Engine() engine.Engine { return g.eng }

// Commit makes the new index the one behind the alias. It refreshes the
// new index (searches see all of it at once), checks that it is still the
// index NewGeneration created (a write re-creates a deleted index with
// dynamic mappings), then moves the alias in one POST /_aliases: remove
// from the old index (must_exist, so the call fails if the alias moved
// meanwhile) and add to the new one; for an index made before versioned
// indexes, remove_index deletes it in the same call. Then the old index is
// deleted (if that fails, the next rebuild does it). When the answer to the
// switch is lost, Commit reads the alias to learn whether it happened.
func (g *Generation) Commit(ctx context.Context) error {
	if g.committed {
		return nil
	}
	e := g.parent
	// The alias may point at an index recording another embedder next.
	defer e.forgetEmbedder()
	alias := e.cfg.Index
	path := "/" + g.index + "/_refresh"
	res, err := e.c.do(ctx, http.MethodPost, path, nil, nil, "")
	if err != nil {
		return err
	}
	if res.Status != http.StatusOK {
		return newResponseError(http.MethodPost, path, res.Status, res.Body)
	}
	behind, body, err := e.lookup(ctx, g.index)
	if err != nil {
		return err
	}
	if behind == nil {
		return fmt.Errorf("opensearchengine: the new index %s was deleted during the rebuild (by another rebuild?)", g.index)
	}
	if err := e.checkMapping(body); err != nil {
		return err
	}
	remove := obj{"remove": obj{"index": g.old, "alias": alias, "must_exist": true}}
	if g.legacy {
		remove = obj{"remove_index": obj{"index": g.old}}
	}
	actions := obj{"actions": []obj{remove, {"add": obj{"index": g.index, "alias": alias}}}}
	res, err = e.c.doJSON(ctx, http.MethodPost, "/_aliases", nil, actions)
	if err == nil && res.Status != http.StatusOK {
		err = newResponseError(http.MethodPost, "/_aliases", res.Status, res.Body)
	}
	if err != nil {
		if behind, _, lerr := e.lookup(ctx, alias); lerr != nil || !slices.Equal(behind, []string{g.index}) {
			return fmt.Errorf("opensearchengine: moving the alias %s from %s to %s: %w", alias, g.old, g.index, err)
		}
		// The switch was made; only its answer was lost.
	}
	g.committed = true
	e.log.Info("opensearch rebuild: the alias points at the new index", "alias", alias, "index", g.index, "replaced", g.old)
	switch {
	case g.legacy:
		// Deleted by remove_index.
	case !isVersion(alias, g.old):
		e.log.Warn("opensearch rebuild: the replaced index is not a versioned index of the alias; left in place", "index", g.old)
	default:
		if err := e.deleteIndex(ctx, g.old); err != nil {
			e.log.Warn("opensearch rebuild: deleting the replaced index failed; the next rebuild deletes it", "index", g.old, "error", err)
		}
	}
	return nil
}

func isVersion(alias, index string) bool {
	_, ok := versionOf(alias, index)
	return ok
}

// Abandon deletes the new index, unless the alias points at it (a Commit
// whose answer was lost may have switched after all). When OpenSearch
// cannot tell, the index is left for the next rebuild to delete.
func (g *Generation) Abandon() {
	if g.committed {
		return
	}
	e := g.parent
	ctx := context.Background() // bounded by Config.RequestTimeout
	behind, _, err := e.lookup(ctx, e.cfg.Index)
	if err != nil {
		e.log.Warn("opensearch rebuild: cannot tell where the alias points; the next rebuild deletes the unfinished index", "index", g.index, "error", err)
		return
	}
	if slices.Equal(behind, []string{g.index}) {
		g.committed = true
		return
	}
	if err := e.deleteIndex(ctx, g.index); err != nil {
		e.log.Warn("opensearch rebuild: deleting the unfinished index failed; the next rebuild deletes it", "index", g.index, "error", err)
		return
	}
	e.log.Info("opensearch rebuild: abandoned; the alias stays on the current index", "deleted", g.index, "alias", e.cfg.Index, "current", g.old)
}

// Reset empties the index: it switches the alias to a new, empty versioned
// index (NewGeneration, Commit) and deletes the old one, which also drops
// the version tombstones of deleted documents (which would make a full
// reindex count recently deleted documents as stale). The alias exists at
// every moment, so no write can meanwhile auto-create an index in its
// place. An index made before versioned indexes is replaced by the first
// versioned one.
func (e *Engine) Reset(ctx context.Context) error {
	g, err := e.NewGeneration(ctx)
	if err != nil {
		return err
	}
	if err := g.Commit(ctx); err != nil {
		g.Abandon()
		return err
	}
	return nil
}
