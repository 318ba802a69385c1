// Package fieldcheck validates request values the same way in every
// service: text that Postgres can store, within a length in characters,
// and page sizes. Its errors are 400s (apierr.Invalid) whose detail names
// the field.
package fieldcheck

import (
	"strings"
	"unicode/utf8"

	"github.com/docrepo/docrepo/pkg/apierr"
)

// Storable reports whether Postgres can store v as text: valid UTF-8
// without NUL characters.
func Storable(v string) bool { return utf8.ValidString(v) && !strings.ContainsRune(v, 0) }

// Text refuses text Postgres cannot store and text longer than max
// characters: one character over the maximum is refused, exactly the
// maximum is accepted.
func Text(field, v string, max int) error {
	if !Storable(v) {
		return apierr.Invalid("Invalid value for %s: not valid UTF-8 text", field)
	}
	if utf8.RuneCountInString(v) > max {
		return apierr.Invalid("Invalid value for %s: longer than %d characters", field, max)
	}
	return nil
}

// Limit returns the page size a request asks for: def when it does not set
// one (set false), else v, which must lie in 1..max.
func Limit(v int32, set bool, def, max int32) (int32, error) {
	if !set {
		return def, nil
	}
	if v < 1 || v > max {
		return 0, apierr.Invalid("limit must be between 1 and %d", max)
	}
	return v, nil
}
