package launcher

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The stack's tests run this test binary as every process of the
// topology (fakeService): it records the order it was started in, its
// environment and which of the addresses it depends on already listened,
// then listens where a service would.

func TestMain(m *testing.M) {
	if dir := os.Getenv("LAUNCHER_FAKE_DIR"); dir != "" {
		fakeService(dir)
		return
	}
	if spec := os.Getenv(holdPortsEnv); spec != "" {
		holdPorts(spec)
		return
	}
	os.Exit(m.Run())
}

// fakeService plays the process its environment describes.
func fakeService(dir string) {
	name, listen := "", ""
	switch {
	case os.Getenv("DOCREPO_HTTP_ADDR") != "":
		name, listen = "gateway", os.Getenv("DOCREPO_HTTP_ADDR")
	case os.Getenv("DOCREPO_NATS_ADDR") != "":
		name, listen = "devnats", os.Getenv("DOCREPO_NATS_ADDR")
	default:
		listen = os.Getenv("DOCREPO_GRPC_ADDR")
		for _, sv := range Services {
			if os.Getenv("DOCREPO_"+strings.ToUpper(sv.Name)+"_ADDR") == listen {
				name = sv.Name
			}
		}
	}
	// What it needs already serving: NATS for every service, every
	// service for the gateway.
	var down []string
	needs := []string{strings.TrimPrefix(os.Getenv("NATS_URL"), "nats://")}
	if name == "gateway" {
		for _, sv := range Services {
			if a := os.Getenv("DOCREPO_" + strings.ToUpper(sv.Name) + "_ADDR"); a != "" {
				needs = append(needs, a)
			}
		}
	}
	if name != "devnats" {
		for _, a := range needs {
			if c, err := net.Dial("tcp", a); err != nil {
				down = append(down, a)
			} else {
				c.Close()
			}
		}
	}
	env := strings.Join(os.Environ(), "\n")
	_ = os.WriteFile(filepath.Join(dir, name+".env"), []byte(env), 0o644)
	f, _ := os.OpenFile(filepath.Join(dir, "starts"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	fmt.Fprintf(f, "%s down=%s\n", name, strings.Join(down, ","))
	f.Close()
	if os.Getenv("LAUNCHER_FAKE_FAIL") == name {
		fmt.Println("failing on purpose")
		os.Exit(3)
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	if name == "gateway" {
		_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		return
	}
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

func fakeStack(t *testing.T, dir string) *Stack {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bins := map[string]string{}
	for _, sv := range Services {
		bins[sv.Name] = self
	}
	return &Stack{
		Binaries: bins, DatabaseURL: "postgres://db", DatabaseURLs: map[string]string{"search": "postgres://docrepo_search@db"}, ServiceToken: "drs_x", DataDir: filepath.Join(dir, "data"),
		Env: []string{"LAUNCHER_FAKE_DIR=" + dir, "DOCREPO_LOG_LEVEL=warn"}, Output: newSyncBuffer(), Wait: 20 * time.Second,
	}
}

func readStarts(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "starts"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

func readEnv(t *testing.T, dir, name string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name+".env"))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(string(data), "\n") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

func TestStackStartsTheTopologyInOrderOnceWhatEachNeedsListens(t *testing.T) {
	dir := t.TempDir()
	s := fakeStack(t, dir)
	s.ServiceEnv = map[string][]string{"search": {"DOCREPO_INDEX_PERSIST_NAP=20ms", "DOCREPO_LOG_LEVEL=debug"}}
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("start: %v\n%s", err, s.Output.(*syncBuffer).String())
	}
	defer s.Stop(10 * time.Second)
	resp, err := http.Get(s.URL() + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("gateway at %s: %v", s.URL(), err)
	}
	resp.Body.Close()
	// NATS first, the gateway last; the services in between start side
	// by side. Each found what it needs listening.
	got := readStarts(t, dir)
	if len(got) == 6 {
		slices.Sort(got[1:5])
	}
	want := []string{"devnats down=", "document down=", "folder down=", "schema down=", "search down=", "gateway down="}
	if !slices.Equal(got, want) {
		t.Fatalf("starts (and what was down at each) = %q, want %q", got, want)
	}
	search := readEnv(t, dir, "search")
	for k, v := range map[string]string{
		"DATABASE_URL": "postgres://docrepo_search@db", "NATS_URL": "nats://" + s.Addr("devnats").Listen, "DOCREPO_SERVICE_TOKEN": "drs_x",
		"DOCREPO_GRPC_ADDR": s.Addr("search").Listen, "DOCREPO_METRICS_ADDR": s.Addr("search").Metrics,
		"DOCREPO_INDEX_DIR": filepath.Join(dir, "data", "index"), "DOCREPO_INDEX_PERSIST_NAP": "20ms",
		"DOCREPO_LOG_LEVEL":     "debug", // ServiceEnv comes after Env
		"DOCREPO_DOCUMENT_ADDR": s.Addr("document").Listen,
	} {
		if search[k] != v {
			t.Errorf("search's %s = %q, want %q", k, search[k], v)
		}
	}
	if gw := readEnv(t, dir, "gateway"); gw["DOCREPO_GATEWAY_ADMIN_ADDR"] != s.Addr("gateway").Metrics || gw["DOCREPO_GATEWAY_ADMIN_ADDR"] == "" {
		t.Errorf("gateway's admin listener %q, want %q", gw["DOCREPO_GATEWAY_ADMIN_ADDR"], s.Addr("gateway").Metrics)
	}
	if doc := readEnv(t, dir, "document"); doc["DATABASE_URL"] != "postgres://db" {
		t.Errorf("document's DATABASE_URL %q: without its own URL a service gets the stack's", doc["DATABASE_URL"])
	}
	if doc := readEnv(t, dir, "document"); doc["DOCREPO_BLOB_DIR"] != filepath.Join(dir, "data", "blobs") || doc["DOCREPO_LOG_LEVEL"] != "warn" {
		t.Errorf("document's blob dir %q, log level %q", doc["DOCREPO_BLOB_DIR"], doc["DOCREPO_LOG_LEVEL"])
	}
	if s.Runs("indexer") || s.Process("indexer") != nil {
		t.Error("the indexer runs without OpenSearch")
	}
}

func TestStackPortsFollowTheBasePort(t *testing.T) {
	s := &Stack{BasePort: 9100, HTTPAddr: "127.0.0.1:8080", NATSAddr: "127.0.0.1:14222", Pprof: true}
	if err := s.planAddrs(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		want Addrs
	}{
		{name: "document", want: Addrs{Listen: "127.0.0.1:9101", Metrics: "127.0.0.1:9111", Pprof: "127.0.0.1:9121"}},
		{name: "folder", want: Addrs{Listen: "127.0.0.1:9102", Metrics: "127.0.0.1:9112", Pprof: "127.0.0.1:9122"}},
		{name: "search", want: Addrs{Listen: "127.0.0.1:9103", Metrics: "127.0.0.1:9113", Pprof: "127.0.0.1:9123"}},
		{name: "schema", want: Addrs{Listen: "127.0.0.1:9104", Metrics: "127.0.0.1:9114", Pprof: "127.0.0.1:9124"}},
		{name: "indexer", want: Addrs{Listen: "127.0.0.1:9105", Metrics: "127.0.0.1:9115", Pprof: "127.0.0.1:9125"}},
		{name: "gateway", want: Addrs{Listen: "127.0.0.1:8080", Metrics: "127.0.0.1:9116", Pprof: "127.0.0.1:9126"}},
		{name: "devnats", want: Addrs{Listen: "127.0.0.1:14222", Pprof: "127.0.0.1:9127"}},
	}
	for _, tt := range tests {
		if got := s.Addr(tt.name); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestStackWithOpenSearchRunsTheIndexerAndOnlyNarrowsIt(t *testing.T) {
	s := &Stack{Env: []string{"OPENSEARCH_URL=http://os:9200"}, NATSURL: "nats://n"}
	if !s.Runs("indexer") || s.Runs("devnats") {
		t.Errorf("with OpenSearch and NATS given: indexer %v, devnats %v; want true, false", s.Runs("indexer"), s.Runs("devnats"))
	}
	s.Only = []string{"document", "folder"}
	for name, want := range map[string]bool{"document": true, "folder": true, "search": false, "gateway": false, "indexer": false} {
		if s.Runs(name) != want {
			t.Errorf("Only document, folder: %s runs %v", name, !want)
		}
	}
}

func TestStackStartFailsWhenAProcessExitsAndStopsTheOthers(t *testing.T) {
	dir := t.TempDir()
	s := fakeStack(t, dir)
	s.Env = append(s.Env, "LAUNCHER_FAKE_FAIL=search")
	err := s.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "search not listening") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("start = %v, want search's exit", err)
	}
	if slices.Contains(readStarts(t, dir), "gateway down=") {
		t.Error("the gateway started though search never listened")
	}
	for _, name := range []string{"devnats", "folder", "document"} {
		if c, err := net.Dial("tcp", s.Addr(name).Listen); err == nil {
			c.Close()
			t.Errorf("%s still listens after the failed start", name)
		}
	}
}

func TestStackVariantSharesTheServicesItDoesNotRun(t *testing.T) {
	dir := t.TempDir()
	shared := fakeStack(t, dir)
	shared.Only = []string{"folder", "schema", "search"}
	if err := shared.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer shared.Stop(10 * time.Second)
	variant := fakeStack(t, dir)
	variant.NATSURL = "nats://" + shared.Addr("devnats").Listen
	variant.Only = []string{"document", "gateway"}
	variant.External = map[string]string{"folder": shared.Addr("folder").Listen, "schema": shared.Addr("schema").Listen,
		"search": shared.Addr("search").Listen}
	variant.ServiceEnv = map[string][]string{"document": {"DOCREPO_MAX_UPLOAD_BYTES=1048576"}}
	if err := variant.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer variant.Stop(10 * time.Second)
	// The variant's gateway found the shared services listening (the fake
	// checks every address it is given).
	if got := readStarts(t, dir); got[len(got)-1] != "gateway down=" {
		t.Fatalf("starts = %q", got)
	}
	gw := readEnv(t, dir, "gateway")
	if gw["DOCREPO_FOLDER_ADDR"] != shared.Addr("folder").Listen || gw["DOCREPO_DOCUMENT_ADDR"] != variant.Addr("document").Listen {
		t.Errorf("the variant's gateway calls folder at %s and document at %s", gw["DOCREPO_FOLDER_ADDR"], gw["DOCREPO_DOCUMENT_ADDR"])
	}
	if readEnv(t, dir, "document")["DOCREPO_MAX_UPLOAD_BYTES"] != "1048576" {
		t.Error("the variant's document service lacks its own setting")
	}
}
