package documentsvc

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/fieldcheck"
)

// Maximum lengths in characters (docs/api.md §8; the same limits apply to PATCH).
const (
	MaxDescription     = 400
	MaxDocType         = 60
	MaxDocStatus       = 50
	MaxEntityLength    = 255 // account_number, reference_number, from_entity, to_entity
	MaxRevNumber       = 10
	MaxSubdoctype      = 255
	MaxFilename        = 255
	MaxDocNumberPrefix = 30
	maxContentType     = 255
)

// textField is one optional free-text metadata field and its limit.
type textField struct {
	name string
	max  int
}

// Field limits by name, shared by upload and update.
var (
	fieldDescription     = textField{"description", MaxDescription}
	fieldDocType         = textField{"doc_type", MaxDocType}
	fieldDocStatus       = textField{"doc_status", MaxDocStatus}
	fieldAccountNumber   = textField{"account_number", MaxEntityLength}
	fieldReferenceNumber = textField{"reference_number", MaxEntityLength}
	fieldFromEntity      = textField{"from_entity", MaxEntityLength}
	fieldToEntity        = textField{"to_entity", MaxEntityLength}
	fieldRevNumber       = textField{"rev_number", MaxRevNumber}
	fieldSubdoctype      = textField{"subdoctype", MaxSubdoctype}
)

// check refuses text Postgres cannot store and text over the limit. One
// character over the maximum is refused; exactly the maximum is accepted.
func (f textField) check(v string) error { return fieldcheck.Text(f.name, v, f.max) }

// optText validates an optional text value and turns "" (and blanks) into
// NULL: an empty form field or JSON string means "no value".
func optText(f textField, v *string) (*string, error) {
	if v == nil {
		return nil, nil
	}
	if err := f.check(*v); err != nil {
		return nil, err
	}
	if strings.TrimSpace(*v) == "" {
		return nil, nil
	}
	return v, nil
}

// dateLayouts are the ISO 8601 forms accepted for the business date. A
// date-time without a zone is read as UTC.
var dateLayouts = []string{
	"2006-01-02",
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
}

// ParseDate parses an ISO 8601 date or date-time.
func ParseDate(field, v string) (time.Time, error) {
	s := strings.TrimSpace(v)
	for _, layout := range dateLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			if !inDateRange(t) {
				break
			}
			return t.UTC(), nil
		}
	}
	return time.Time{}, apierr.Invalid("Invalid value for %s: expected an ISO 8601 date such as 2024-05-31 or 2024-05-31T12:00:00Z", field)
}

// inDateRange reports whether t falls in years 1 to 9999 once in UTC, the
// form dates are stored and returned in (RFC 3339 and protobuf timestamps
// have no other years). The offset matters: 9999-12-31T23:00:00-05:00 is
// in year 10000.
func inDateRange(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 1 && y <= 9999
}

// optDate parses an optional date; "" means no date.
func optDate(v *string) (*time.Time, error) {
	if v == nil || strings.TrimSpace(*v) == "" {
		return nil, nil
	}
	if len(*v) > 64 {
		return nil, apierr.Invalid("Invalid value for date: expected an ISO 8601 date such as 2024-05-31 or 2024-05-31T12:00:00Z")
	}
	t, err := ParseDate("date", *v)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// prefixRE is what a doc_number_prefix may look like: it starts with a
// letter or digit and continues with letters, digits, '_', '.', '/' or '-'.
var prefixRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_./-]*$`)

// CheckDocNumberPrefix validates a doc_number_prefix.
func CheckDocNumberPrefix(p string) error {
	switch {
	case p == "":
		return apierr.Invalid("Invalid value for doc_number_prefix: must not be empty")
	case len(p) > MaxDocNumberPrefix:
		return apierr.Invalid("Invalid value for doc_number_prefix: longer than %d characters", MaxDocNumberPrefix)
	case !prefixRE.MatchString(p):
		return apierr.Invalid("Invalid value for doc_number_prefix: use letters, digits and _ . / - only, starting with a letter or digit")
	}
	return nil
}

// FormatDocNumber renders a document number: the prefix, a dash and the
// sequence zero-padded to five digits (more digits past 99999).
func FormatDocNumber(prefix string, seq int64) string {
	return fmt.Sprintf("%s-%05d", prefix, seq)
}

// cleanFilename keeps the last path segment of a client's filename (some
// browsers send full Windows paths) and checks it. The result is data only:
// it never becomes part of a storage path.
func cleanFilename(name string) (string, error) {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	if err := fieldcheck.Text("filename", name, MaxFilename); err != nil {
		return "", err
	}
	return strings.TrimSpace(name), nil
}

// defaultDescription is the description of an upload that gave none: the
// uploaded filename, cut to the description limit.
func defaultDescription(filename string) string {
	if strings.TrimSpace(filename) == "" {
		return "Untitled"
	}
	if utf8.RuneCountInString(filename) > MaxDescription {
		return string([]rune(filename)[:MaxDescription])
	}
	return filename
}
