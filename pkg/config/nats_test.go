package config_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/docrepo/docrepo/pkg/config"
)

// A NATS server that requires a user and password accepts the services'
// connections only with NATS_USER and NATS_PASSWORD set, as compose and
// kustomize configure them.
func TestNATSConnectsOnlyWithConfiguredUserAndPassword(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, Username: "docrepo", Password: "s3cret", NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	url := fmt.Sprintf("nats://%s", srv.Addr())
	tests := []struct {
		name    string
		getenv  map[string]string
		wantErr string
	}{
		{name: "no credentials", wantErr: "authorization violation"},
		{name: "wrong password", getenv: map[string]string{"NATS_USER": "docrepo", "NATS_PASSWORD": "guess"}, wantErr: "authorization violation"},
		{name: "user and password", getenv: map[string]string{"NATS_USER": "docrepo", "NATS_PASSWORD": "s3cret"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c config.Common
			l := config.New("test", func(k string) string { return tt.getenv[k] })
			l.RegisterCommon(&c, "", "")
			if err := l.Parse(nil); err != nil {
				t.Fatal(err)
			}
			nc, err := nats.Connect(url, append(c.NATSOptions(), nats.Timeout(5*time.Second))...)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("connect: %v", err)
				}
				nc.Close()
				return
			}
			if err == nil {
				nc.Close()
				t.Fatal("connected without valid credentials")
			}
			if !strings.Contains(strings.ToLower(err.Error()), tt.wantErr) {
				t.Fatalf("connect: %v, want %q", err, tt.wantErr)
			}
		})
	}
}
