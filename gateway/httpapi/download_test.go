package httpapi

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
)

func i64(v int64) *int64 { return &v }

func TestParseDownloadRequest(t *testing.T) {
	tests := []struct {
		name    string
		docID   string
		query   string
		rng     string
		want    *documentv1.DownloadFileRequest
		wantErr string
	}{
		{name: "current file", docID: "7", want: &documentv1.DownloadFileRequest{DocId: 7}},
		{name: "a version", docID: "7", query: "linked_file_id=3", want: &documentv1.DownloadFileRequest{DocId: 7, LinkedFileId: i64(3)}},
		{name: "an archive entry", docID: "7", query: "archive_id=4", want: &documentv1.DownloadFileRequest{DocId: 7, LinkedFileId: i64(4), Archive: true}},
		{name: "both", docID: "7", query: "linked_file_id=3&archive_id=4", wantErr: "Use either linked_file_id or archive_id, not both"},
		{name: "bad version id", docID: "7", query: "linked_file_id=x", wantErr: "Invalid value for linked_file_id: expected an integer"},
		{name: "bad doc id", docID: "seven", wantErr: "Invalid value for doc_id: expected an integer"},
		{name: "a range", docID: "7", rng: "bytes=10-19", want: &documentv1.DownloadFileRequest{DocId: 7, RangeFirst: i64(10), RangeLast: i64(19)}},
		{name: "an open range", docID: "7", rng: "bytes=10-", want: &documentv1.DownloadFileRequest{DocId: 7, RangeFirst: i64(10)}},
		{name: "a suffix", docID: "7", rng: "bytes=-5", want: &documentv1.DownloadFileRequest{DocId: 7, RangeSuffix: i64(5)}},
		{name: "several ranges are ignored", docID: "7", rng: "bytes=0-1,5-6", want: &documentv1.DownloadFileRequest{DocId: 7}},
		{name: "a backwards range is ignored", docID: "7", rng: "bytes=9-3", want: &documentv1.DownloadFileRequest{DocId: 7}},
		{name: "another unit is ignored", docID: "7", rng: "items=0-1", want: &documentv1.DownloadFileRequest{DocId: 7}},
		{name: "a signed number is ignored", docID: "7", rng: "bytes=+1-2", want: &documentv1.DownloadFileRequest{DocId: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseDownloadRequest(tt.docID, q, tt.rng)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tt.want.String() {
				t.Fatalf("request = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDecideDownload(t *testing.T) {
	const sha = "ab12"
	modified := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	partial := &documentv1.DownloadHeader{Sha256: sha, Partial: true, LastModified: timestamppb.New(modified)}
	whole := &documentv1.DownloadHeader{Sha256: sha, LastModified: timestamppb.New(modified)}
	tests := []struct {
		name          string
		hdr           *documentv1.DownloadHeader
		ranged        bool
		unsatisfiable bool
		ifNoneMatch   string
		ifRange       string
		want          downloadAnswer
	}{
		{name: "plain download", hdr: whole, want: answerOpened},
		{name: "a range", hdr: partial, ranged: true, want: answerOpened},
		{name: "If-None-Match matches", hdr: whole, ifNoneMatch: `"ab12"`, want: answerNotModified},
		{name: "If-None-Match among others, weak", hdr: whole, ifNoneMatch: `"x", W/"ab12"`, want: answerNotModified},
		{name: "If-None-Match *", hdr: whole, ifNoneMatch: `*`, want: answerNotModified},
		{name: "If-None-Match differs", hdr: whole, ifNoneMatch: `"other"`, want: answerOpened},
		{name: "If-None-Match beats an unsatisfiable range", hdr: whole, ranged: true, unsatisfiable: true, ifNoneMatch: `"ab12"`, want: answerNotModified},
		{name: "unsatisfiable range", hdr: whole, ranged: true, unsatisfiable: true, want: answerUnsatisfiable},
		{name: "If-Range current etag keeps the range", hdr: partial, ranged: true, ifRange: `"ab12"`, want: answerOpened},
		{name: "If-Range current date keeps the range", hdr: partial, ranged: true, ifRange: modified.Format(http.TimeFormat), want: answerOpened},
		{name: "If-Range stale etag sends the whole file", hdr: partial, ranged: true, ifRange: `"old"`, want: answerWholeFile},
		{name: "If-Range weak etag never matches", hdr: partial, ranged: true, ifRange: `W/"ab12"`, want: answerWholeFile},
		{name: "If-Range stale date sends the whole file", hdr: partial, ranged: true, ifRange: modified.Add(-time.Hour).Format(http.TimeFormat), want: answerWholeFile},
		{name: "stale If-Range beats an unsatisfiable range", hdr: whole, ranged: true, unsatisfiable: true, ifRange: `"old"`, want: answerOpened},
		{name: "If-Range without a range is ignored", hdr: whole, ifRange: `"old"`, want: answerOpened},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideDownload(tt.hdr, tt.ranged, tt.unsatisfiable, tt.ifNoneMatch, tt.ifRange); got != tt.want {
				t.Fatalf("decideDownload = %d, want %d", got, tt.want)
			}
		})
	}
}

// The headers the handler sets are exactly those the OpenAPI document
// declares for each kind of response, and every required one is set.
func TestDownloadHeadersMatchTheirDocumentation(t *testing.T) {
	hdr := &documentv1.DownloadHeader{Sha256: strings.Repeat("a", 64), Filename: "a.txt", Size: 10, RangeFirst: 2, RangeLast: 5,
		Partial: true, LastModified: timestamppb.Now()}
	for _, k := range []downloadKind{downloadWhole, downloadPartial, downloadNotModified, downloadUnsatisfiable} {
		h := http.Header{}
		setDownloadHeaders(h, k, hdr)
		docs := downloadHeaderDocs(k)
		var set, documented []string
		for name := range h {
			set = append(set, name)
		}
		for name, d := range docs {
			documented = append(documented, http.CanonicalHeaderKey(name))
			if d.Value.Required && h.Get(name) == "" {
				t.Errorf("kind %d: required header %s not set", k, name)
			}
		}
		slices.Sort(set)
		slices.Sort(documented)
		if !slices.Equal(set, documented) {
			t.Errorf("kind %d: set %v, documented %v", k, set, documented)
		}
	}
}
