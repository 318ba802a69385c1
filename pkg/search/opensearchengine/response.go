package opensearchengine

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/docrepo/docrepo/pkg/search/dsl"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// searchResponse is the part of a _search response this package reads.
type searchResponse struct {
	TimedOut bool `json:"timed_out"`
	Shards   struct {
		Total      int               `json:"total"`
		Successful int               `json:"successful"`
		Failed     int               `json:"failed"`
		Failures   []json.RawMessage `json:"failures"`
	} `json:"_shards"`
	Hits struct {
		Total *struct {
			Value    int64  `json:"value"`
			Relation string `json:"relation"`
		} `json:"total"`
		Hits []rawHit `json:"hits"`
	} `json:"hits"`
	// Aggregations holds the aggregations asked for (DocFreqs'), by name.
	Aggregations map[string]json.RawMessage `json:"aggregations"`
}

type rawHit struct {
	ID        string                     `json:"_id"`
	Score     *float64                   `json:"_score"`
	Source    map[string]json.RawMessage `json:"_source"`
	Highlight map[string][]string        `json:"highlight"`
}

func decodeSearch(data []byte) (*searchResponse, error) {
	var r searchResponse
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("opensearchengine: decoding the search response: %w", err)
	}
	if r.Shards.Failed > 0 {
		// A partial answer would silently drop matches: fail instead.
		detail := ""
		if len(r.Shards.Failures) > 0 {
			detail = ": " + truncate(string(r.Shards.Failures[0]), 500)
		}
		return nil, fmt.Errorf("opensearchengine: search failed on %d of %d shards%s", r.Shards.Failed, r.Shards.Total, detail)
	}
	return &r, nil
}

// hitID is the document id of a hit (the _id is the decimal id).
func hitID(h *rawHit) (int64, error) {
	id, err := strconv.ParseInt(h.ID, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("opensearchengine: hit with non-numeric _id %q", h.ID)
	}
	return id, nil
}

// toHit converts a raw hit: selected fields from _source, the score where
// something ranks, and the highlight fragments cut to the visible length.
func (p *searchPlan) toHit(h *rawHit) (engine.Hit, error) {
	id, err := hitID(h)
	if err != nil {
		return engine.Hit{}, err
	}
	out := engine.Hit{ID: id}
	if (p.ranking() || p.vectorOnly()) && h.Score != nil {
		s := *h.Score
		out.Score = &s
	}
	for _, name := range p.q.Select {
		f, ok := dsl.LookupField(name)
		if !ok || name == dsl.FieldID {
			continue
		}
		if out.Fields == nil {
			out.Fields = make(map[string]any)
		}
		v, err := sourceValue(f, h.Source[name])
		if err != nil {
			return engine.Hit{}, fmt.Errorf("opensearchengine: document %d: %w", id, err)
		}
		out.Fields[name] = v
	}
	if p.highlight != nil {
		frags := h.Highlight[fieldContent]
		out.Highlights = make([]string, 0, len(frags))
		for _, frag := range frags {
			if s := snippet(frag, p.q.Options.HighlightLength); s != "" {
				out.Highlights = append(out.Highlights, s)
			}
		}
	}
	return out, nil
}

// sourceValue decodes a field's _source value into the type engine.Hit
// uses; nil when the document lacks the field.
func sourceValue(f dsl.Field, raw json.RawMessage) (any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	switch f.Type {
	case dsl.TypeString:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		return s, nil
	case dsl.TypeBool:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		return b, nil
	case dsl.TypeInt:
		if f.Multi {
			var ids []int64
			if raw[0] != '[' {
				raw = append(append([]byte{'['}, raw...), ']')
			}
			if err := json.Unmarshal(raw, &ids); err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			if len(ids) == 0 {
				return nil, nil
			}
			return ids, nil
		}
		var n int64
		if err := json.Unmarshal(raw, &n); err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		return n, nil
	case dsl.TypeDateTime:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		return t.UTC(), nil
	}
	return nil, fmt.Errorf("field %s has no type", f.Name)
}

// sortHits orders vector-only hits by the effective sort, as OpenSearch
// sorts the other modes: missing values last in both directions, strings
// by code point (UTF-8 bytes), false before true, ties by id ascending.
func (p *searchPlan) sortHits(hits []rawHit) error {
	type keyed struct {
		hit  rawHit
		id   int64
		vals []any // per sort key; nil = missing
	}
	keys := p.q.EffectiveSort()
	items := make([]keyed, len(hits))
	for i := range hits {
		id, err := hitID(&hits[i])
		if err != nil {
			return err
		}
		it := keyed{hit: hits[i], id: id, vals: make([]any, len(keys))}
		for j, k := range keys {
			switch k.Field {
			case dsl.FieldScore:
				if hits[i].Score != nil {
					it.vals[j] = *hits[i].Score
				}
			case dsl.FieldID:
				it.vals[j] = id
			default:
				f, ok := dsl.LookupField(k.Field)
				if !ok {
					return fmt.Errorf("opensearchengine: cannot sort on %q", k.Field)
				}
				v, err := sourceValue(f, hits[i].Source[k.Field])
				if err != nil {
					return fmt.Errorf("opensearchengine: document %d: %w", id, err)
				}
				it.vals[j] = v
			}
		}
		items[i] = it
	}
	slices.SortStableFunc(items, func(a, b keyed) int {
		for j, k := range keys {
			av, bv := a.vals[j], b.vals[j]
			switch {
			case av == nil && bv == nil:
				continue
			case av == nil:
				return 1
			case bv == nil:
				return -1
			}
			c := compareValues(av, bv)
			if k.Desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return cmp.Compare(a.id, b.id)
	})
	for i := range items {
		hits[i] = items[i].hit
	}
	return nil
}

func compareValues(a, b any) int {
	switch a := a.(type) {
	case string:
		return cmp.Compare(a, b.(string))
	case int64:
		return cmp.Compare(a, b.(int64))
	case float64:
		return cmp.Compare(a, b.(float64))
	case bool:
		bb := b.(bool)
		switch {
		case a == bb:
			return 0
		case !a:
			return -1
		default:
			return 1
		}
	case time.Time:
		return a.Compare(b.(time.Time))
	}
	return 0
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
