// Package grpctls is the transport security of the gRPC calls between
// docrepo's processes. By default they are plaintext, for a private
// network or a service mesh that encrypts them; with certificates set they
// are TLS, and mutual TLS when every process also has a certificate the
// others' CA signed:
//
//	DOCREPO_GRPC_TLS_CERT, DOCREPO_GRPC_TLS_KEY  this process's certificate
//	    and key (PEM): a server serves TLS with them; a client presents
//	    them (mutual TLS)
//	DOCREPO_GRPC_TLS_CA  the CA bundle (PEM) that signed the servers'
//	    certificates: clients dial with TLS and verify the server against
//	    it; a server with a CA also requires and verifies client
//	    certificates (mutual TLS)
//
// The service credential (DOCREPO_SERVICE_TOKEN) and user tokens then never
// cross the network in clear text.
package grpctls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"google.golang.org/grpc/credentials"
)

// The environment variables of Config (registered by
// config.Loader.RegisterGRPCTLS).
const (
	EnvCert = "DOCREPO_GRPC_TLS_CERT"
	EnvKey  = "DOCREPO_GRPC_TLS_KEY"
	EnvCA   = "DOCREPO_GRPC_TLS_CA"
)

// Config names the PEM files of a process's gRPC TLS settings.
type Config struct {
	CertFile, KeyFile, CAFile string
}

func (c Config) check() error {
	if (c.CertFile == "") != (c.KeyFile == "") {
		return fmt.Errorf("grpctls: %s and %s go together", EnvCert, EnvKey)
	}
	return nil
}

// Server returns the server's transport credentials, or nil for plaintext
// (no certificate set).
func (c Config) Server() (credentials.TransportCredentials, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.CertFile == "" {
		if c.CAFile != "" {
			return nil, fmt.Errorf("grpctls: a server with %s needs %s and %s too", EnvCA, EnvCert, EnvKey)
		}
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("grpctls: server certificate: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pool, err := loadPool(c.CAFile)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return credentials.NewTLS(cfg), nil
}

// Client returns the transport credentials to dial docrepo's servers with,
// or nil for plaintext (no CA set).
func (c Config) Client() (credentials.TransportCredentials, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.CAFile == "" {
		return nil, nil
	}
	pool, err := loadPool(c.CAFile)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("grpctls: client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return credentials.NewTLS(cfg), nil
}

func loadPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("grpctls: CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("grpctls: CA: no PEM certificate in " + file)
	}
	return pool, nil
}
