package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/catalog"
	rest "github.com/docrepo/docrepo/pkg/client"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/launcher"
	"github.com/docrepo/docrepo/pkg/testenv/natstest"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// ownStack is a stack of one test's own, for the tests that kill a
// process of it with SIGKILL (faults_*_test.go): the shared stack's
// processes serve every other test at once, and a variant of it shares
// its database and NATS, whose queues, consumers and advisory locks the
// shared processes would take part in. It has its own database, its own
// NATS server and its own files; every process is supervised, restarted
// after a kill as a process manager would.
type ownStack struct {
	*launcher.Stack
	t     *testing.T
	pool  *pgxpool.Pool // the database, as its owner
	ids   *identity.Store
	nats  *natstest.Server
	out   *syncBuffer // every process's output
	admin string      // an admin service credential
}

// startOwnStack starts the services in only (the gateway among them)
// with the suite's settings, then env, then each service's serviceEnv;
// the processes reach the services in calls (ones the test runs itself)
// at the given addresses.
func startOwnStack(t *testing.T, only []string, calls map[string]string, serviceEnv map[string][]string, env ...string) *ownStack {
	t.Helper()
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t, identity.Migrations)
	pool, err := database.Open(ctx, dbURL, catalog.Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := &ownStack{t: t, pool: pool, ids: identity.NewStore(pool), nats: natstest.Start(t), out: &syncBuffer{}}
	token, _, err := s.ids.CreateServiceCredential(ctx, "docrepo-service", []string{auth.ScopeInternal}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s.admin, _, err = s.ids.CreateServiceCredential(ctx, "faults-admin", []string{auth.ScopeAdmin}, 0); err != nil {
		t.Fatal(err)
	}
	svcEnv := map[string][]string{}
	for name, e := range stk.ServiceEnv {
		svcEnv[name] = slices.Clone(e)
	}
	for name, e := range serviceEnv {
		svcEnv[name] = append(svcEnv[name], e...)
	}
	var out io.Writer = s.out
	if os.Getenv("DOCREPO_E2E_LOG") != "" {
		out = io.MultiWriter(s.out, os.Stderr)
	}
	s.Stack = &launcher.Stack{Binaries: binaries, DatabaseURL: dbURL, NATSURL: s.nats.URL(), ServiceToken: token,
		DataDir: t.TempDir(), Only: only, External: calls, Supervise: true,
		// Always the embedded engine: the suite's OpenSearch index (when
		// OPENSEARCH_URL is set) would be written with this stack's ids.
		Env:        append(append(slices.Clone(stk.Env), "OPENSEARCH_URL="), env...),
		ServiceEnv: svcEnv, Output: out, PrefixLines: true}
	if err := s.Start(ctx); err != nil {
		t.Fatalf("start: %v\n%s", err, s.out.String())
	}
	t.Cleanup(func() {
		s.Stop(30 * time.Second)
		if t.Failed() {
			t.Logf("the stack's output, last 200 lines:\n%s", lastLines(s.out.String(), 200))
		}
	})
	return s
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// user makes a user in a group of its own with every public scope and
// returns the REST client of its key and its name.
func (s *ownStack) user(scopes ...string) (*rest.Client, string) {
	s.t.Helper()
	if len(scopes) == 0 {
		scopes = allScopes
	}
	name := uniq("user")
	if _, err := s.ids.CreateUser(context.Background(), name, []string{uniq("g")}); err != nil {
		s.t.Fatal(err)
	}
	token, _, err := s.ids.CreateKey(context.Background(), name, scopes, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	return restClient(s.t, s.URL(), token), name
}

// kill kills the named service's process with SIGKILL (only it: children
// of its own, such as tesseract, die with it by their parent-death
// signal), waits until it is gone, runs whileDown (when not nil), and
// returns once the supervisor's next process of it listens again.
func (s *ownStack) kill(name string, whileDown func()) {
	s.t.Helper()
	p := s.Process(name)
	if p == nil {
		s.t.Fatalf("%s does not run", name)
	}
	if err := syscall.Kill(p.Pid(), syscall.SIGKILL); err != nil {
		s.t.Fatalf("kill %s: %v", name, err)
	}
	<-p.Done()
	if whileDown != nil {
		whileDown()
	}
	eventually(s.t, 2*time.Minute, func() error {
		next := s.Process(name)
		if next == nil || next == p {
			return fmt.Errorf("%s not restarted", name)
		}
		return launcher.WaitTCP(context.Background(), next, s.Addr(name).Listen, time.Second)
	})
}
