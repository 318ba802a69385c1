// Package e2e holds docrepo's end-to-end tests: every service runs for real
// (its own gRPC server on a TCP port, real Postgres, real NATS JetStream),
// and the tests talk to the real gateway over HTTP as a client would.
//
// One stack serves the whole package (see TestMain); tests isolate
// themselves by creating their own users and groups.
package e2e
