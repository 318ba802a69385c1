package configref

import (
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/config"
)

func TestRenderListsEachVariableOnceWithItsReaders(t *testing.T) {
	addr := func(def string) config.Var {
		return config.Var{Flag: "grpc-addr", Env: "DOCREPO_GRPC_ADDR", Type: "string", Default: def, Usage: "gRPC listen address"}
	}
	wait := config.Var{Flag: "wait", Env: "DOCREPO_WAIT", Type: "duration", Default: "1h0m0s", Usage: "a | b"}
	page, err := Render([]Command{
		{Name: "document", Vars: []config.Var{addr("127.0.0.1:9101"), wait}},
		{Name: "folder", Vars: []config.Var{addr("127.0.0.1:9102")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| `DOCREPO_GRPC_ADDR` | `-grpc-addr` | `127.0.0.1:9101` (document), `127.0.0.1:9102` (folder) | document, folder | gRPC listen address |",
		"| `DOCREPO_WAIT` | `-wait` | `1h` | document | a \\| b |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if strings.Index(page, "DOCREPO_GRPC_ADDR") > strings.Index(page, "DOCREPO_WAIT") {
		t.Error("variables are not in alphabetical order")
	}
}

func TestRenderRefusesOneVariableWithTwoMeanings(t *testing.T) {
	_, err := Render([]Command{
		{Name: "gateway", Vars: []config.Var{{Flag: "log-level", Env: "DOCREPO_LOG_LEVEL", Type: "string", Default: "info", Usage: "log level"}}},
		{Name: "document", Vars: []config.Var{{Flag: "log-level", Env: "DOCREPO_LOG_LEVEL", Type: "string", Default: "info", Usage: "log level: debug, info, warn, error"}}},
	})
	if err == nil || !strings.Contains(err.Error(), "DOCREPO_LOG_LEVEL means one thing in gateway") {
		t.Fatalf("err = %v, want the two registrations named", err)
	}
}

func TestDurationsReadAsPeopleWriteThem(t *testing.T) {
	tests := []struct{ in, want string }{
		{in: "10s", want: "`10s`"},
		{in: "1m0s", want: "`1m`"},
		{in: "1h0m0s", want: "`1h`"},
		{in: "1h30m0s", want: "`1h30m`"},
		{in: "720h0m0s", want: "`720h`"},
		{in: "0s", want: "`0s`"},
		{in: "1m30s", want: "`1m30s`"},
	}
	for _, tt := range tests {
		if got := value(tt.in, "duration"); got != tt.want {
			t.Errorf("value(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestReadByNamesGroupsAndTheRest(t *testing.T) {
	tests := []struct {
		cmds []string
		want string
	}{
		{cmds: []string{"gateway", "document", "folder", "search", "schema", "indexer", "docrepoctl"}, want: "every process, docrepoctl"},
		{cmds: []string{"document", "folder", "search", "schema", "indexer", "devstack"}, want: "every service, devstack"},
		{cmds: []string{"search", "indexer"}, want: "search, indexer"},
	}
	for _, tt := range tests {
		if got := readBy(tt.cmds); got != tt.want {
			t.Errorf("readBy(%v) = %q, want %q", tt.cmds, got, tt.want)
		}
	}
}

func TestCellEscapesMarkdown(t *testing.T) {
	if got := cell("a | <alias>-v<N>"); got != `a \| &lt;alias&gt;-v&lt;N&gt;` {
		t.Fatalf("cell = %q", got)
	}
}
