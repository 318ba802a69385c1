package documentsvc

import (
	"testing"

	"github.com/docrepo/docrepo/pkg/apierr"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
)

func TestDownloadName(t *testing.T) {
	tests := []struct {
		name, description, origname, want string
	}{
		{name: "extension added", description: "Q3 report", origname: "data.xlsx", want: "Q3 report.xlsx"},
		{name: "extension present", description: "Q3.XLSX", origname: "data.xlsx", want: "Q3.XLSX"},
		{name: "other extension kept and added", description: "v1.2", origname: "a.pdf", want: "v1.2.pdf"},
		{name: "no original extension", description: "notes", origname: "Makefile", want: "notes"},
		{name: "separators and controls", description: "a/b\\c\td", origname: "x.txt", want: "a_b_c_d.txt"},
		{name: "blank description", description: "   ", origname: "x.txt", want: "download.txt"},
		{name: "dots only", description: "..", origname: "x.txt", want: "download.txt"},
		{name: "windows original path", description: "d", origname: `C:\x\y.doc`, want: "d.doc"},
		{name: "extension with space ignored", description: "d", origname: "y.do c", want: "d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DownloadName(tt.description, tt.origname); got != tt.want {
				t.Fatalf("DownloadName(%q, %q) = %q, want %q", tt.description, tt.origname, got, tt.want)
			}
		})
	}
}

func TestByteRange(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	tests := []struct {
		name                 string
		req                  *documentv1.DownloadFileRequest
		size                 int64
		first, last          int64
		partial, unsatisfied bool
	}{
		{name: "whole", req: &documentv1.DownloadFileRequest{}, size: 10, first: 0, last: 9},
		{name: "whole empty file", req: &documentv1.DownloadFileRequest{}, size: 0, first: 0, last: -1},
		{name: "closed range", req: &documentv1.DownloadFileRequest{RangeFirst: i(2), RangeLast: i(4)}, size: 10, first: 2, last: 4, partial: true},
		{name: "open range", req: &documentv1.DownloadFileRequest{RangeFirst: i(7)}, size: 10, first: 7, last: 9, partial: true},
		{name: "last clipped", req: &documentv1.DownloadFileRequest{RangeFirst: i(7), RangeLast: i(100)}, size: 10, first: 7, last: 9, partial: true},
		{name: "suffix", req: &documentv1.DownloadFileRequest{RangeSuffix: i(3)}, size: 10, first: 7, last: 9, partial: true},
		{name: "suffix longer than the file", req: &documentv1.DownloadFileRequest{RangeSuffix: i(30)}, size: 10, first: 0, last: 9, partial: true},
		{name: "first at the end", req: &documentv1.DownloadFileRequest{RangeFirst: i(10)}, size: 10, unsatisfied: true},
		{name: "zero suffix", req: &documentv1.DownloadFileRequest{RangeSuffix: i(0)}, size: 10, unsatisfied: true},
		{name: "any range of an empty file", req: &documentv1.DownloadFileRequest{RangeFirst: i(0)}, size: 0, unsatisfied: true},
		{name: "last before first", req: &documentv1.DownloadFileRequest{RangeFirst: i(5), RangeLast: i(4)}, size: 10, unsatisfied: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, last, partial, err := byteRange(tt.req, tt.size)
			if tt.unsatisfied {
				if !apierr.IsKind(err, apierr.KindRangeNotSatisfiable) {
					t.Fatalf("err = %v, want 416", err)
				}
				return
			}
			if err != nil || first != tt.first || last != tt.last || partial != tt.partial {
				t.Fatalf("byteRange = %d-%d partial %v, %v; want %d-%d partial %v", first, last, partial, err, tt.first, tt.last, tt.partial)
			}
		})
	}
}
