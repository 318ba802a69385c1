package audit

import (
	"encoding/base64"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/docrepo/docrepo/pkg/apierr"
)

// Cursor is where a reader of the merged feed stands: the position reached
// in each owner's log (by schema name). The zero value is the start.
type Cursor map[string]Position

// String encodes c for a client to send back (opaque, URL-safe).
func (c Cursor) String() string {
	if len(c) == 0 {
		return ""
	}
	var b strings.Builder
	for i, src := range slices.Sorted(maps.Keys(c)) {
		if i > 0 {
			b.WriteByte(';')
		}
		p := c[src]
		b.WriteString(src + ":" + strconv.FormatUint(p.TxID, 10) + ":" + strconv.FormatInt(p.ID, 10))
	}
	return base64.RawURLEncoding.EncodeToString([]byte(b.String()))
}

// ParseCursor decodes a cursor from String; "" is the start.
func ParseCursor(s string) (Cursor, error) {
	c := Cursor{}
	if s == "" {
		return c, nil
	}
	bad := apierr.Invalid("Invalid value for cursor: not a cursor this API returned")
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) > 1024 {
		return nil, bad
	}
	for _, part := range strings.Split(string(raw), ";") {
		f := strings.Split(part, ":")
		if len(f) != 3 || f[0] == "" {
			return nil, bad
		}
		tx, err1 := strconv.ParseUint(f[1], 10, 64)
		id, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || id < 0 {
			return nil, bad
		}
		if _, dup := c[f[0]]; dup {
			return nil, bad
		}
		c[f[0]] = Position{TxID: tx, ID: id}
	}
	return c, nil
}

// Merge interleaves the owners' parts of one page (each in its own (txid,
// id) order, as List returns them, keyed by source) into up to limit
// entries, taking at each step the earliest head by time (then source and
// id), and returns them with the cursor advanced past exactly the entries
// taken. Each owner's own order is kept, so every entry is returned once
// whatever the clocks say.
func Merge(parts map[string][]Record, cur Cursor, limit int) ([]Record, Cursor) {
	limit = clamp(limit)
	next := Cursor{}
	for k, v := range cur {
		next[k] = v
	}
	heads := map[string]int{}
	var out []Record
	for len(out) < limit {
		best := ""
		for src, recs := range parts {
			i := heads[src]
			if i >= len(recs) {
				continue
			}
			if best == "" || earlier(recs[i], parts[best][heads[best]]) {
				best = src
			}
		}
		if best == "" {
			break
		}
		r := parts[best][heads[best]]
		heads[best]++
		out = append(out, r)
		next[best] = r.Position()
	}
	return out, next
}

func earlier(a, b Record) bool {
	if !a.OccurredAt.Equal(b.OccurredAt) {
		return a.OccurredAt.Before(b.OccurredAt)
	}
	if a.Source != b.Source {
		return a.Source < b.Source
	}
	return a.ID < b.ID
}
