package config

import (
	"strings"
	"testing"
	"time"
)

func TestEnvDefaultsAndFlagOverrides(t *testing.T) {
	env := map[string]string{"A_STR": "from-env", "A_INT": "7", "A_DUR": "2s", "A_BOOL": "true"}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantStr string
		wantInt int
		wantDur time.Duration
		wantErr string
	}{
		{name: "defaults", env: map[string]string{}, wantStr: "def", wantInt: 1, wantDur: time.Second},
		{name: "env", env: env, wantStr: "from-env", wantInt: 7, wantDur: 2 * time.Second},
		{name: "flags win", env: env, args: []string{"-str", "flag", "-int", "9"}, wantStr: "flag", wantInt: 9, wantDur: 2 * time.Second},
		{name: "bad env int", env: map[string]string{"A_INT": "x"}, wantErr: "A_INT"},
		{name: "bad env duration", env: map[string]string{"A_DUR": "soon"}, wantErr: "A_DUR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New("t", func(k string) string { return tt.env[k] })
			var (
				s string
				i int
				d time.Duration
				b bool
			)
			l.String(&s, "str", "A_STR", "def", "")
			l.Int(&i, "int", "A_INT", 1, "")
			l.Duration(&d, "dur", "A_DUR", time.Second, "")
			l.Bool(&b, "bool", "A_BOOL", false, "")
			err := l.Parse(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want mention of %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s != tt.wantStr || i != tt.wantInt || d != tt.wantDur {
				t.Fatalf("got %q %d %v", s, i, d)
			}
		})
	}
}
