package fieldcheck

import (
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		max     int
		wantErr string
	}{
		{name: "exactly the maximum", value: "ééé", max: 3},
		{name: "one character over", value: "éééé", max: 3, wantErr: "Invalid value for f: longer than 3 characters"},
		{name: "not UTF-8", value: "a\xffb", max: 10, wantErr: "Invalid value for f: not valid UTF-8 text"},
		{name: "NUL", value: "a\x00b", max: 10, wantErr: "Invalid value for f: not valid UTF-8 text"},
		{name: "empty", value: "", max: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Text("f", tt.value, tt.max)
			if got := errString(err); got != tt.wantErr {
				t.Fatalf("Text = %q, want %q", got, tt.wantErr)
			}
		})
	}
}

func TestLimit(t *testing.T) {
	tests := []struct {
		name    string
		v       int32
		set     bool
		want    int32
		wantErr string
	}{
		{name: "unset takes the default", want: 50},
		{name: "one", v: 1, set: true, want: 1},
		{name: "the maximum", v: 500, set: true, want: 500},
		{name: "zero when set", v: 0, set: true, wantErr: "limit must be between 1 and 500"},
		{name: "negative", v: -3, set: true, wantErr: "limit must be between 1 and 500"},
		{name: "over the maximum", v: 501, set: true, wantErr: "limit must be between 1 and 500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Limit(tt.v, tt.set, 50, 500)
			if e := errString(err); e != tt.wantErr || (err == nil && got != tt.want) {
				t.Fatalf("Limit = %d, %q; want %d, %q", got, e, tt.want, tt.wantErr)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	// apierr errors print as their detail.
	return strings.TrimSpace(err.Error())
}
