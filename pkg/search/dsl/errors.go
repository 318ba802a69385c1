package dsl

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Error is a validation error in a search request. Detail is the user-facing
// message; the search service returns it as the `detail` of a 400 response.
// Every error returned by Parse, ParseFTS and RequestFromMap is an *Error.
type Error struct {
	Detail string
}

func (e *Error) Error() string { return e.Detail }

func errorf(format string, args ...any) error {
	return &Error{Detail: fmt.Sprintf(format, args...)}
}

// maxDisplayName bounds how much of a user-supplied name is echoed back in
// an error message, so a megabyte-long field name cannot produce a
// megabyte-long response.
const maxDisplayName = 64

// displayName renders a user-supplied name for an error message: truncated
// to maxDisplayName characters, with invalid UTF-8 and non-printable
// characters replaced by U+FFFD.
func displayName(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == maxDisplayName {
			b.WriteString("...")
			break
		}
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// maxListedKeys bounds how many offending keys one error message lists.
const maxListedKeys = 5

// keyList renders keys sorted, comma-separated, at most maxListedKeys of them.
func keyList(keys []string) string {
	sorted := append([]string(nil), keys...)
	sort.Strings(sorted)
	shown := sorted
	if len(shown) > maxListedKeys {
		shown = shown[:maxListedKeys]
	}
	parts := make([]string, len(shown))
	for i, k := range shown {
		parts[i] = displayName(k)
	}
	s := strings.Join(parts, ", ")
	if more := len(sorted) - len(shown); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// checkKeys reports keys of m that are not in allowed, naming them and the
// place ("in eq clause", "in sort entry", ...).
func checkKeys(m map[string]any, place string, allowed ...string) error {
	var unknown []string
	for k := range m {
		ok := false
		for _, a := range allowed {
			if k == a {
				ok = true
				break
			}
		}
		if !ok {
			unknown = append(unknown, k)
		}
	}
	switch len(unknown) {
	case 0:
		return nil
	case 1:
		return errorf("Unknown key %s %s", keyList(unknown), place)
	default:
		return errorf("Unknown keys %s %s", keyList(unknown), place)
	}
}
