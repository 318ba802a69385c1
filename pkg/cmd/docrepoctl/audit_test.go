package main

import (
	"testing"
	"time"
)

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{in: ""},
		{in: "2026-11-25T08:00:00Z", want: time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)},
		{in: "2h", want: now.Add(-2 * time.Hour)},
		{in: "-2h", wantErr: true},
		{in: "yesterday", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseWhen("since", tt.in, now)
		if (err != nil) != tt.wantErr || !got.Equal(tt.want) {
			t.Errorf("parseWhen(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
