package identity_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/logging"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// Every change of keys, credentials, users and groups made through the
// store is in the identity schema's audit log, once, with who made it; a
// second revocation changes nothing and records nothing.
func TestIdentityChangesAreAudited(t *testing.T) {
	pool := pgtest.NewPool(t, "", identity.Migrations)
	s := identity.NewStore(pool)
	ctx := logging.WithRequestID(audit.WithService(context.Background(), "docrepoctl"), "req-1")
	u, err := s.CreateUser(ctx, "alice", []string{"finance"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateGroup(ctx, "legal"); err != nil {
		t.Fatal(err)
	}
	if err := s.AddUserToGroups(ctx, "alice", []string{"legal", "finance"}); err != nil {
		t.Fatal(err)
	}
	_, key, err := s.CreateKey(ctx, "alice", []string{auth.ScopeSearch}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A revocation made by a user's call names the user.
	asBob := auth.WithPrincipal(ctx, &auth.Principal{UserID: 99, Username: "bob", KeyID: 5})
	for range 2 {
		if err := s.RevokeKey(asBob, key.ID); err != nil {
			t.Fatal(err)
		}
	}
	_, cred, err := s.CreateServiceCredential(ctx, "indexer", []string{auth.ScopeInternal}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeServiceCredential(ctx, cred.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateKey(ctx, "nobody", []string{auth.ScopeSearch}, 0); err == nil {
		t.Fatal("a key for an unknown user was created")
	}

	want := []string{
		fmt.Sprintf(`user.created %d docrepoctl {"groups":["finance"],"username":"alice"}`, u.ID),
		`group.created * docrepoctl {"name":"legal"}`,
		fmt.Sprintf(`user.groups_added %d docrepoctl {"groups":["legal"],"username":"alice"}`, u.ID),
		fmt.Sprintf(`api_key.created %d docrepoctl {"expires_at":null,"prefix":%q,"scopes":["search"],"username":"alice"}`, key.ID, key.Prefix),
		fmt.Sprintf(`api_key.revoked %d bob {"username":"alice"}`, key.ID),
		fmt.Sprintf(`service_credential.created %d docrepoctl {"expires_at":%s,"name":"indexer","prefix":%q,"scopes":["internal"]}`, cred.ID, mustJSON(cred.ExpiresAt), cred.Prefix),
		fmt.Sprintf(`service_credential.revoked %d docrepoctl {"name":"indexer"}`, cred.ID),
	}
	var got []audit.Record
	// The feed shows a transaction once every older one in the whole
	// (shared) Postgres server has ended: other test processes may hold
	// one open for a while.
	for deadline := time.Now().Add(time.Minute); len(got) < len(want) && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got, err = s.AuditEntries(ctx, audit.Filter{}, audit.Position{}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d: %+v", len(got), len(want), got)
	}
	for i, r := range got {
		who := r.Actor.Service
		if r.Actor.Username != "" {
			who = r.Actor.Username
		}
		var details any
		if err := json.Unmarshal(r.Details, &details); err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("%s %d %s %s", r.Action, r.ObjectID, who, mustJSON(details))
		if i == 1 {
			line = fmt.Sprintf("%s * %s %s", r.Action, who, mustJSON(details))
		}
		if line != want[i] {
			t.Errorf("entry %d = %s\n                 want %s", i, line, want[i])
		}
		if r.RequestID != "req-1" || r.Source != identity.Schema {
			t.Errorf("entry %d: request id %q, source %q", i, r.RequestID, r.Source)
		}
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
