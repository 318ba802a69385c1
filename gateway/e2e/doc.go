// Package e2e holds docrepo's end-to-end tests: every service runs for real
// (its own gRPC server on a TCP port, real Postgres, real NATS JetStream),
// and the tests talk to the real gateway over HTTP as a client would.
//
// One stack serves the whole package (see TestMain): launcher.Stack, the
// topology `make run` starts, on a fresh database and an in-process NATS.
// Tests isolate themselves by creating their own users and groups; a test
// that needs a service configured otherwise starts a variant
// (startVariant) sharing the rest. Ordinary calls go through the house
// client (pkg/client, c.rest()); tests of the wire itself use doRequestTo.
package e2e
