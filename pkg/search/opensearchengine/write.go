package opensearchengine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// maxBulkBytes bounds one bulk request body (far below OpenSearch's
// http.max_content_length of 100mb, so a batch of large extracted texts is
// split into several requests). A single larger document is sent alone.
const maxBulkBytes = 8 << 20

// source is the indexed form of a document (its _source). Absent
// metadata (nil pointers, no folders, no vectors) is left out, so queries
// see the field as missing; so is empty content, so that exists on content
// (DocFreqs' number of documents) counts only documents with text, as the
// embedded engine's N does (an empty text field would still count: its
// norm is written).
type source struct {
	ID              int64           `json:"id"`
	Groups          []int64         `json:"groups,omitempty"`
	FilesBelongTo   []int64         `json:"filesbelongto,omitempty"`
	Description     *string         `json:"description,omitempty"`
	DocNumber       *string         `json:"doc_number,omitempty"`
	DocType         *string         `json:"doc_type,omitempty"`
	DocStatus       *string         `json:"doc_status,omitempty"`
	ReferenceNumber *string         `json:"reference_number,omitempty"`
	FromEntity      *string         `json:"from_entity,omitempty"`
	ToEntity        *string         `json:"to_entity,omitempty"`
	EntryPerson     *string         `json:"entry_person,omitempty"`
	RevNumber       *string         `json:"rev_number,omitempty"`
	Subdoctype      *string         `json:"subdoctype,omitempty"`
	Date            *string         `json:"date,omitempty"`
	EntryDate       *string         `json:"entry_date,omitempty"`
	Privileged      bool            `json:"privileged"`
	IsLocked        bool            `json:"islocked"`
	Content         string          `json:"content,omitempty"`
	ContentPassages []passageSource `json:"content_passages,omitempty"`
	MetadataVector  []float32       `json:"metadata_vector,omitempty"`
}

// passageSource is one passage of the content (a nested object).
type passageSource struct {
	Vector []float32 `json:"vector"`
}

func sourceOf(d *engine.Document) source {
	s := source{
		ID:              d.ID,
		Groups:          engine.SortedIDs(d.GroupIDs),
		FilesBelongTo:   engine.SortedIDs(d.FolderIDs),
		Description:     d.Description,
		DocNumber:       d.DocNumber,
		DocType:         d.DocType,
		DocStatus:       d.DocStatus,
		ReferenceNumber: d.ReferenceNumber,
		FromEntity:      d.FromEntity,
		ToEntity:        d.ToEntity,
		EntryPerson:     d.EntryPerson,
		RevNumber:       d.RevNumber,
		Subdoctype:      d.Subdoctype,
		Privileged:      d.Privileged,
		IsLocked:        d.IsLocked,
		Content:         d.Content,
		MetadataVector:  d.MetadataVector,
	}
	for _, v := range d.ContentVectors {
		s.ContentPassages = append(s.ContentPassages, passageSource{Vector: v})
	}
	if d.Date != nil {
		v := formatTime(*d.Date)
		s.Date = &v
	}
	if d.EntryDate != nil {
		v := formatTime(*d.EntryDate)
		s.EntryDate = &v
	}
	return s
}

// validate rejects what OpenSearch would reject for the whole batch's
// configuration (wrong vector length) or could not store (a revision
// outside the external version range).
func (e *Engine) validate(d *engine.Document) error {
	if d.Rev < 0 {
		return fmt.Errorf("opensearchengine: document %d: negative revision %d", d.ID, d.Rev)
	}
	for i, v := range d.ContentVectors {
		if len(v) != e.cfg.Dimensions {
			return fmt.Errorf("opensearchengine: document %d: content passage %d has %d dimensions, the index %d", d.ID, i, len(v), e.cfg.Dimensions)
		}
	}
	if d.MetadataVector != nil && len(d.MetadataVector) != e.cfg.MetadataDimensions {
		return fmt.Errorf("opensearchengine: document %d: metadata vector has %d dimensions, the index %d", d.ID, len(d.MetadataVector), e.cfg.MetadataDimensions)
	}
	return nil
}

// bulkAction is the action line of one document: index it under its id
// with its revision as external version, so OpenSearch itself stores it
// only when the revision is greater than the stored one and answers 409
// otherwise (also for a recently deleted document whose delete had the
// same or a newer revision: see Delete). A Reread document replaces the
// same revision too (external_gte).
func bulkAction(d *engine.Document) obj {
	vt := "external"
	if d.Reread {
		vt = "external_gte"
	}
	return obj{"index": obj{
		"_id":          strconv.FormatInt(d.ID, 10),
		"version":      d.Rev,
		"version_type": vt,
	}}
}

// bulkBodies encodes the documents as NDJSON bulk bodies of at most
// maxBulkBytes each (a larger document alone). idx maps each body's items
// to their documents.
func bulkBodies(docs []engine.Document, pending []int) (bodies [][]byte, idx [][]int, err error) {
	var buf bytes.Buffer
	var cur []int
	for _, i := range pending {
		d := &docs[i]
		action, err := json.Marshal(bulkAction(d))
		if err != nil {
			return nil, nil, err
		}
		src, err := json.Marshal(sourceOf(d))
		if err != nil {
			return nil, nil, fmt.Errorf("opensearchengine: document %d: %w", d.ID, err)
		}
		n := len(action) + len(src) + 2
		if buf.Len() > 0 && buf.Len()+n > maxBulkBytes {
			bodies = append(bodies, bytes.Clone(buf.Bytes()))
			idx = append(idx, cur)
			buf.Reset()
			cur = nil
		}
		buf.Write(action)
		buf.WriteByte('\n')
		buf.Write(src)
		buf.WriteByte('\n')
		cur = append(cur, i)
	}
	if buf.Len() > 0 {
		bodies = append(bodies, bytes.Clone(buf.Bytes()))
		idx = append(idx, cur)
	}
	return bodies, idx, nil
}

type bulkResponse struct {
	Errors bool                  `json:"errors"`
	Items  []map[string]bulkItem `json:"items"`
}

type bulkItem struct {
	ID     string          `json:"_id"`
	Status int             `json:"status"`
	Error  json.RawMessage `json:"error"`
}

func (it *bulkItem) errorText() string {
	var s struct {
		Type   string `json:"type"`
		Reason string `json:"reason"`
	}
	if json.Unmarshal(it.Error, &s) == nil && s.Type != "" {
		return s.Type + ": " + s.Reason
	}
	return truncate(string(it.Error), 300)
}

// Upsert indexes the documents with the bulk API, each with its Rev as
// external version. Per document: 200/201 is Written; 409 (the index holds
// the same or a newer revision) is Stale, not an error; 429 and 503 (a
// full write queue, an unavailable shard) are retried with backoff up to
// MaxRetries times; anything else fails that document, and Upsert then
// returns the counts with an error naming the failures.
//
// A retry after a transport-level failure can resend documents that were
// in fact written: they come back 409 and count as Stale (OpenSearch
// cannot tell the two apart), so Written may undercount then; the stored
// state is right either way.
func (e *Engine) Upsert(ctx context.Context, docs []engine.Document) (engine.WriteResult, error) {
	var wr engine.WriteResult
	if err := e.check(); err != nil {
		return wr, err
	}
	for i := range docs {
		if err := e.validate(&docs[i]); err != nil {
			return wr, err
		}
	}
	pending := newestPerID(docs, &wr)
	var failures []string
	failed := 0
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt > 0 {
			if err := sleep(ctx, backoffDelay(e.cfg.RetryBackoff, attempt)); err != nil {
				return wr, err
			}
		}
		bodies, idx, err := bulkBodies(docs, pending)
		if err != nil {
			return wr, err
		}
		var retry []int
		for b, body := range bodies {
			items, err := e.bulk(ctx, body, len(idx[b]))
			if err != nil {
				return wr, err
			}
			for j, it := range items {
				d := &docs[idx[b][j]]
				switch {
				case it.Status == http.StatusOK || it.Status == http.StatusCreated:
					wr.Written++
				case it.Status == http.StatusConflict:
					wr.Stale++
				case (it.Status == http.StatusTooManyRequests || it.Status == http.StatusServiceUnavailable) && attempt < e.cfg.MaxRetries:
					retry = append(retry, idx[b][j])
				default:
					failed++
					if len(failures) < 5 {
						failures = append(failures, fmt.Sprintf("document %d: %d %s", d.ID, it.Status, it.errorText()))
					}
				}
			}
		}
		pending = retry
	}
	if failed > 0 {
		return wr, fmt.Errorf("opensearchengine: %d of %d documents were not indexed: %s", failed, len(docs), strings.Join(failures, "; "))
	}
	return wr, nil
}

// newestPerID returns the indexes of the documents to send: per id, the
// one with the newest revision (the first of equals); the others count as
// Stale, as they would if sent in order after it.
func newestPerID(docs []engine.Document, wr *engine.WriteResult) []int {
	best := make(map[int64]int, len(docs))
	order := make([]int64, 0, len(docs))
	for i := range docs {
		j, seen := best[docs[i].ID]
		if !seen {
			best[docs[i].ID] = i
			order = append(order, docs[i].ID)
			continue
		}
		wr.Stale++
		if docs[i].Rev > docs[j].Rev {
			best[docs[i].ID] = i
		}
	}
	out := make([]int, len(order))
	for k, id := range order {
		out[k] = best[id]
	}
	return out
}

// bulk sends one bulk body and returns its n items in order.
func (e *Engine) bulk(ctx context.Context, body []byte, n int) ([]bulkItem, error) {
	path := e.indexPath("/_bulk")
	res, err := e.c.do(ctx, http.MethodPost, path, url.Values{"refresh": {e.cfg.Refresh}}, body, "application/x-ndjson")
	if err != nil {
		return nil, err
	}
	if res.Status != http.StatusOK {
		return nil, newResponseError(http.MethodPost, path, res.Status, res.Body)
	}
	var br bulkResponse
	if err := json.Unmarshal(res.Body, &br); err != nil {
		return nil, fmt.Errorf("opensearchengine: decoding the bulk response: %w", err)
	}
	if len(br.Items) != n {
		return nil, fmt.Errorf("opensearchengine: bulk response has %d items for %d documents", len(br.Items), n)
	}
	items := make([]bulkItem, n)
	for i, m := range br.Items {
		it, ok := m["index"]
		if !ok {
			return nil, fmt.Errorf("opensearchengine: bulk response item %d is not an index result", i)
		}
		items[i] = it
	}
	return items, nil
}

// Delete deletes the document with rev as external version and
// version_type external_gte: OpenSearch deletes it unless it holds a newer
// revision (409, not an error), and deleting an absent document (404) is
// not an error either. Either way OpenSearch keeps a tombstone with the
// revision for index.gc_deletes (60s by default), during which an older
// Upsert of the document is rejected as stale; after that only a
// revision older than the stored one is caught, so a much-delayed upsert
// of a deleted document could come back (the indexer reloads the document
// and skips it when it no longer exists).
func (e *Engine) Delete(ctx context.Context, id, rev int64) error {
	if err := e.check(); err != nil {
		return err
	}
	if rev < 0 {
		return fmt.Errorf("opensearchengine: document %d: negative revision %d", id, rev)
	}
	path := e.indexPath("/_doc/" + strconv.FormatInt(id, 10))
	q := url.Values{
		"version":      {strconv.FormatInt(rev, 10)},
		"version_type": {"external_gte"},
		"refresh":      {e.cfg.Refresh},
	}
	res, err := e.c.do(ctx, http.MethodDelete, path, q, nil, "")
	if err != nil {
		return err
	}
	switch res.Status {
	case http.StatusOK, http.StatusConflict:
		return nil
	case http.StatusNotFound:
		// Either the document is absent (result "not_found": fine) or the
		// index is (an error).
		var r struct {
			Result string `json:"result"`
		}
		if json.Unmarshal(res.Body, &r) == nil && r.Result == "not_found" {
			return nil
		}
	}
	return newResponseError(http.MethodDelete, path, res.Status, res.Body)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("opensearchengine: %w", ctx.Err())
	case <-t.C:
		return nil
	}
}
