package documentsvc

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/docrepo/docrepo/pkg/apierr"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
)

func TestParseDate(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		want  time.Time
		valid bool
	}{
		{name: "date", in: "2024-02-29", want: time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), valid: true},
		{name: "RFC 3339 UTC", in: "2024-02-29T13:14:15Z", want: time.Date(2024, 2, 29, 13, 14, 15, 0, time.UTC), valid: true},
		{name: "RFC 3339 offset", in: "2024-02-29T13:14:15+02:00", want: time.Date(2024, 2, 29, 11, 14, 15, 0, time.UTC), valid: true},
		{name: "fraction", in: "2024-02-29T13:14:15.5Z", want: time.Date(2024, 2, 29, 13, 14, 15, 5e8, time.UTC), valid: true},
		{name: "no zone is UTC", in: "2024-02-29T13:14:15", want: time.Date(2024, 2, 29, 13, 14, 15, 0, time.UTC), valid: true},
		{name: "minutes only", in: "2024-02-29T13:14", want: time.Date(2024, 2, 29, 13, 14, 0, 0, time.UTC), valid: true},
		{name: "space separator", in: "2024-02-29 13:14:15", want: time.Date(2024, 2, 29, 13, 14, 15, 0, time.UTC), valid: true},
		{name: "surrounding spaces", in: " 2024-02-29 ", want: time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), valid: true},
		{name: "not a leap year", in: "2023-02-29"},
		{name: "European order", in: "29.02.2024"},
		{name: "US order", in: "02/29/2024"},
		{name: "words", in: "yesterday"},
		{name: "empty", in: ""},
		{name: "year zero", in: "0000-01-01"},
		{name: "first instant", in: "0001-01-01T00:00:00Z", want: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), valid: true},
		{name: "last second", in: "9999-12-31T23:59:59Z", want: time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), valid: true},
		// The range is that of UTC, the form the date is stored and
		// returned in: these are years 10000 and 0 once converted.
		{name: "past 9999 in UTC", in: "9999-12-31T23:00:00-05:00"},
		{name: "before year 1 in UTC", in: "0001-01-01T00:00:00+14:00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDate("date", tt.in)
			if !tt.valid {
				if !apierr.IsKind(err, apierr.KindInvalid) {
					t.Fatalf("ParseDate(%q) = %v, %v; want a 400", tt.in, got, err)
				}
				return
			}
			if err != nil || !got.Equal(tt.want) || got.Location() != time.UTC {
				t.Fatalf("ParseDate(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestDocNumbers(t *testing.T) {
	tests := []struct {
		name   string
		prefix string
		seq    int64
		want   string
	}{
		{name: "first", prefix: "INV", seq: 1, want: "INV-00001"},
		{name: "padded", prefix: "INV", seq: 4711, want: "INV-04711"},
		{name: "last five-digit", prefix: "INV", seq: 99999, want: "INV-99999"},
		{name: "more digits past 99999", prefix: "INV", seq: 100000, want: "INV-100000"},
		{name: "prefix with separators", prefix: "HR/2024-A", seq: 7, want: "HR/2024-A-00007"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatDocNumber(tt.prefix, tt.seq); got != tt.want {
				t.Fatalf("FormatDocNumber(%q, %d) = %q, want %q", tt.prefix, tt.seq, got, tt.want)
			}
		})
	}
}

func TestCheckDocNumberPrefix(t *testing.T) {
	tests := []struct {
		name   string
		prefix string
		valid  bool
	}{
		{name: "letters", prefix: "INV", valid: true},
		{name: "digits and separators", prefix: "2024_A.b/c-d", valid: true},
		{name: "exactly 30", prefix: strings.Repeat("P", 30), valid: true},
		{name: "31", prefix: strings.Repeat("P", 31)},
		{name: "empty", prefix: ""},
		{name: "leading dash", prefix: "-INV"},
		{name: "space", prefix: "IN V"},
		{name: "non-ASCII", prefix: "RÉF"},
		{name: "percent", prefix: "A%"},
		{name: "newline", prefix: "A\nB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckDocNumberPrefix(tt.prefix)
			if tt.valid != (err == nil) {
				t.Fatalf("CheckDocNumberPrefix(%q) = %v, valid %v", tt.prefix, err, tt.valid)
			}
			if err != nil && !apierr.IsKind(err, apierr.KindInvalid) {
				t.Fatalf("error %v is not a 400", err)
			}
		})
	}
}

func TestTextLimits(t *testing.T) {
	tests := []struct {
		name  string
		field textField
		value string
		valid bool
	}{
		{name: "at the limit in runes", field: fieldDescription, value: strings.Repeat("ü", 400), valid: true},
		{name: "one over", field: fieldDescription, value: strings.Repeat("ü", 401)},
		{name: "rev_number at 10", field: fieldRevNumber, value: "0123456789", valid: true},
		{name: "rev_number at 11", field: fieldRevNumber, value: "01234567890"},
		{name: "NUL byte", field: fieldDocStatus, value: "a\x00b"},
		{name: "invalid UTF-8", field: fieldDocStatus, value: "a\xffb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.field.check(tt.value)
			if tt.valid != (err == nil) {
				t.Fatalf("check = %v, valid %v", err, tt.valid)
			}
		})
	}
}

func TestParseUploadMeta(t *testing.T) {
	s := func(v string) *string { return &v }
	id := func(v int64) *int64 { return &v }
	tests := []struct {
		name   string
		meta   *documentv1.UploadMetadata
		final  bool
		detail string
	}{
		{name: "folder may come later", meta: &documentv1.UploadMetadata{Description: s("x")}},
		{name: "folder required at the end", meta: &documentv1.UploadMetadata{Description: s("x")}, final: true,
			detail: "Missing required field: folder_id"},
		{name: "negative folder", meta: &documentv1.UploadMetadata{FolderId: id(-1)}, detail: "Invalid value for folder_id: must not be negative"},
		{name: "complete", meta: &documentv1.UploadMetadata{FolderId: id(3), DocStatus: s("new"), Date: s("2024-01-02")}, final: true},
		{name: "bad date", meta: &documentv1.UploadMetadata{Date: s("2024-13-01")},
			detail: "Invalid value for date: expected an ISO 8601 date such as 2024-05-31 or 2024-05-31T12:00:00Z"},
		{name: "long account number", meta: &documentv1.UploadMetadata{AccountNumber: s(strings.Repeat("a", 256))},
			detail: "Invalid value for account_number: longer than 255 characters"},
		{name: "bad prefix", meta: &documentv1.UploadMetadata{DocNumberPrefix: s("a b")},
			detail: "Invalid value for doc_number_prefix: use letters, digits and _ . / - only, starting with a letter or digit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseUploadMeta(tt.meta, tt.final)
			switch {
			case tt.detail == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tt.detail != "" && (err == nil || err.(*apierr.Error).Detail != tt.detail):
				t.Fatalf("err = %v, want %q", err, tt.detail)
			}
		})
	}
	// Blank optional values are stored as no value.
	f, err := parseUploadMeta(&documentv1.UploadMetadata{FolderId: id(1), DocStatus: s("  "), Date: s("")}, true)
	if err != nil || f.docStatus != nil || f.date != nil {
		t.Fatalf("blank values = %+v, %v", f, err)
	}
}

func TestCleanFilename(t *testing.T) {
	tests := []struct {
		name, in, want string
		valid          bool
	}{
		{name: "plain", in: "report.pdf", want: "report.pdf", valid: true},
		{name: "windows path", in: `C:\fakepath\report.pdf`, want: "report.pdf", valid: true},
		{name: "unix path", in: "../../etc/passwd", want: "passwd", valid: true},
		{name: "empty", in: "", want: "", valid: true},
		{name: "too long", in: strings.Repeat("n", 256)},
		{name: "NUL", in: "a\x00.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cleanFilename(tt.in)
			if tt.valid != (err == nil) || got != tt.want {
				t.Fatalf("cleanFilename(%q) = %q, %v", tt.in, got, err)
			}
		})
	}
	if got := defaultDescription(""); got != "Untitled" {
		t.Fatalf("defaultDescription(\"\") = %q", got)
	}
	if got := defaultDescription(strings.Repeat("ä", 255)); got != strings.Repeat("ä", 255) {
		t.Fatalf("defaultDescription changed a valid name")
	}
}

func TestParseInclude(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		want  includes
		valid bool
	}{
		{name: "none", in: "", valid: true},
		{name: "both", in: "versions,folders", want: includes{versions: true, folders: true}, valid: true},
		{name: "spaces, case and blanks", in: " Folders , ,customfields", want: includes{folders: true, customfields: true}, valid: true},
		{name: "unknown", in: "versions,history"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseInclude(tt.in)
			if tt.valid != (err == nil) || (tt.valid && got != tt.want) {
				t.Fatalf("parseInclude(%q) = %+v, %v", tt.in, got, err)
			}
		})
	}
}

// TestCustomDateRange: custom-field dates obey the range of document dates
// (years 1 to 9999 in UTC), so a stored value is always a valid RFC 3339
// date.
func TestCustomDateRange(t *testing.T) {
	r := columnRule{name: "due", typ: "date"}
	for in, want := range map[string]string{
		"2024-02-01":                "2024-02-01",
		"2024-02-01T12:00:00+02:00": "2024-02-01T10:00:00Z",
		"9999-12-31T23:59:59Z":      "9999-12-31T23:59:59Z",
	} {
		got, err := checkValue(r, 1, structpb.NewStringValue(in))
		if err != nil || got != want {
			t.Errorf("checkValue(%q) = %v, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"0000-01-01", "9999-12-31T23:00:00-05:00", "0001-01-01T00:00:00+14:00"} {
		if got, err := checkValue(r, 1, structpb.NewStringValue(in)); !apierr.IsKind(err, apierr.KindInvalid) {
			t.Errorf("checkValue(%q) = %v, %v; want a 400", in, got, err)
		}
	}
}
