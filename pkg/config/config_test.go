package config

import (
	"strings"
	"testing"
	"time"
)

func TestEnvironmentGivesDefaultsAndFlagsWin(t *testing.T) {
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

// TestUsageListsEverySettingAndParsesBack: -h is what the configuration
// reference is generated from, so every registered setting must come back
// from ParseUsage with its flag, variable, type, default and meaning.
func TestUsageListsEverySettingAndParsesBack(t *testing.T) {
	l := New("t", func(string) string { return "" })
	var c Common
	l.RegisterCommon(&c, "folder", "127.0.0.1:9112")
	var (
		ratio float64
		size  int64
		quote string
	)
	l.Float64(&ratio, "ratio", "T_RATIO", 0.25, "a fraction (0 to 1)")
	l.Int64(&size, "size", "T_SIZE", 1<<40, "bytes | with a pipe")
	l.String(&quote, "quote", "T_QUOTE", `say "hi" (env NOT_THIS)`, "a default with quotes")
	err := l.Parse([]string{"-h"})
	if err == nil {
		t.Fatal("-h gave no usage")
	}
	got, perr := ParseUsage(err.Error())
	if perr != nil {
		t.Fatal(perr)
	}
	want := l.Vars()
	if len(got) != len(want) || len(want) < 15 {
		t.Fatalf("parsed %d settings from -h, registered %d:\n%s", len(got), len(want), err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("setting %d: parsed %+v, registered %+v", i, got[i], want[i])
		}
	}
	byEnv := map[string]Var{}
	for _, v := range got {
		byEnv[v.Env] = v
	}
	for env, def := range map[string]string{"DOCREPO_GRPC_ADDR": "127.0.0.1:9102", "T_RATIO": "0.25", "T_SIZE": "1099511627776", "T_QUOTE": `say "hi" (env NOT_THIS)`, "DOCREPO_MIGRATE": "true"} {
		if byEnv[env].Default != def {
			t.Errorf("%s: default %q, want %q", env, byEnv[env].Default, def)
		}
	}
}

// TestVarsKeepTheCodeDefault: the reference documents the code's default
// even when the environment overrides it.
func TestVarsKeepTheCodeDefault(t *testing.T) {
	l := New("t", func(k string) string { return map[string]string{"T_WAIT": "5s"}[k] })
	var d time.Duration
	l.Duration(&d, "wait", "T_WAIT", time.Minute, "how long")
	if err := l.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if d != 5*time.Second {
		t.Fatalf("value %v, want the environment's 5s", d)
	}
	if v := l.Vars()[0]; v.Default != "1m0s" || v.Type != "duration" {
		t.Fatalf("var %+v: want the code default 1m0s, type duration", v)
	}
}

func TestRegisteringOneVariableTwiceFailsParse(t *testing.T) {
	l := New("t", func(string) string { return "" })
	var a, b string
	l.ServiceAddr(&a, "folder")
	l.String(&b, "other", "DOCREPO_FOLDER_ADDR", "", "the same variable again")
	if err := l.Parse(nil); err == nil || !strings.Contains(err.Error(), "DOCREPO_FOLDER_ADDR registered twice") {
		t.Fatalf("err = %v, want DOCREPO_FOLDER_ADDR registered twice", err)
	}
}

func TestServiceAddrUnknownServiceFailsParse(t *testing.T) {
	l := New("t", func(string) string { return "" })
	var a string
	l.ServiceAddr(&a, "billing")
	if err := l.Parse(nil); err == nil || !strings.Contains(err.Error(), "billing") {
		t.Fatalf("err = %v, want the unknown service named", err)
	}
}

func TestParseUsageRejectsALineItCannotRead(t *testing.T) {
	if _, err := ParseUsage("usage of x:\n  -name  no type (env X)\n"); err == nil {
		t.Fatal("a malformed setting line was skipped silently")
	}
	vars, err := ParseUsage("x: usage of x:\n  docrepoctl [FLAGS] COMMAND\n  -a int  n (env A) (default \"1\")\n")
	if err != nil || len(vars) != 1 || vars[0].Env != "A" {
		t.Fatalf("got %+v, %v: want the one setting, the other lines skipped", vars, err)
	}
}
