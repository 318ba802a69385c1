package grpctls_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/docrepo/docrepo/pkg/grpctls"
)

// pki writes a CA and certificates it signed (for 127.0.0.1) to dir.
type pki struct {
	dir    string
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "docrepo test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	p := &pki{dir: t.TempDir(), caCert: cert, caKey: key}
	p.write(t, "ca.pem", "CERTIFICATE", der)
	return p
}

func (p *pki) write(t *testing.T, name, typ string, der []byte) string {
	t.Helper()
	f := filepath.Join(p.dir, name)
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// issue returns the certificate and key files of a new leaf.
func (p *pki) issue(t *testing.T, name string, serial int64) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return p.write(t, name+".pem", "CERTIFICATE", der), p.write(t, name+"-key.pem", "EC PRIVATE KEY", kder)
}

// serve starts a gRPC server with health on creds and returns its address.
func serve(t *testing.T, creds credentials.TransportCredentials) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var opts []grpc.ServerOption
	if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	s := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(s, health.NewServer())
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

func check(addr string, creds credentials.TransportCredentials) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

func TestMutualTLS(t *testing.T) {
	p := newPKI(t)
	ca := filepath.Join(p.dir, "ca.pem")
	srvCert, srvKey := p.issue(t, "search", 2)
	cliCert, cliKey := p.issue(t, "gateway", 3)
	other := newPKI(t)
	strangerCert, strangerKey := other.issue(t, "stranger", 4)

	serverCreds, err := grpctls.Config{CertFile: srvCert, KeyFile: srvKey, CAFile: ca}.Server()
	if err != nil || serverCreds == nil {
		t.Fatalf("server credentials: %v, %v", serverCreds, err)
	}
	addr := serve(t, serverCreds)
	client := func(cfg grpctls.Config) credentials.TransportCredentials {
		t.Helper()
		c, err := cfg.Client()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	tests := []struct {
		name  string
		creds credentials.TransportCredentials
		ok    bool
	}{
		{name: "client certificate from the CA", creds: client(grpctls.Config{CertFile: cliCert, KeyFile: cliKey, CAFile: ca}), ok: true},
		{name: "no client certificate", creds: client(grpctls.Config{CAFile: ca})},
		{name: "certificate of another CA", creds: client(grpctls.Config{CertFile: strangerCert, KeyFile: strangerKey, CAFile: ca})},
		{name: "plaintext", creds: insecure.NewCredentials()},
		{name: "server not trusted", creds: client(grpctls.Config{CertFile: cliCert, KeyFile: cliKey, CAFile: filepath.Join(other.dir, "ca.pem")})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := check(addr, tt.creds)
			if tt.ok != (err == nil) {
				t.Fatalf("health check: %v, want success %v", err, tt.ok)
			}
		})
	}
}

// TestServerTLSWithoutClientCertificates: a server without a CA serves
// TLS to any client that trusts it; plaintext is refused.
func TestServerTLSWithoutClientCertificates(t *testing.T) {
	p := newPKI(t)
	srvCert, srvKey := p.issue(t, "document", 2)
	creds, err := grpctls.Config{CertFile: srvCert, KeyFile: srvKey}.Server()
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, creds)
	cli, err := grpctls.Config{CAFile: filepath.Join(p.dir, "ca.pem")}.Client()
	if err != nil {
		t.Fatal(err)
	}
	if err := check(addr, cli); err != nil {
		t.Fatalf("TLS client: %v", err)
	}
	if err := check(addr, insecure.NewCredentials()); err == nil {
		t.Fatal("a plaintext client reached a TLS server")
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name   string
		cfg    grpctls.Config
		server bool
		want   string
	}{
		{name: "cert without key", cfg: grpctls.Config{CertFile: "c.pem"}, server: true, want: "go together"},
		{name: "server CA without certificate", cfg: grpctls.Config{CAFile: "ca.pem"}, server: true, want: "needs"},
		{name: "missing CA file", cfg: grpctls.Config{CAFile: "/nonexistent/ca.pem"}, want: "CA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.server {
				_, err = tt.cfg.Server()
			} else {
				_, err = tt.cfg.Client()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
	if c, err := (grpctls.Config{}).Server(); c != nil || err != nil {
		t.Fatalf("empty config: %v %v, want plaintext", c, err)
	}
	if c, err := (grpctls.Config{}).Client(); c != nil || err != nil {
		t.Fatalf("empty config: %v %v, want plaintext", c, err)
	}
}
