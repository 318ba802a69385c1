// Package miniotest runs a real MinIO server for tests.
//
// [Start] returns a running server on a free 127.0.0.1 port with a fresh
// data directory, ready to serve S3 requests, and gives each test its own
// bucket name through [Server.BucketName]. By default every Start launches a
// dedicated server (about half a second) that is stopped when the test ends.
// A package with many S3 tests shares one server per test binary instead:
//
//	func TestMain(m *testing.M) { os.Exit(miniotest.Run(m)) }
//
// or, combined with other harnesses, stop := miniotest.Share(); ...; stop().
//
// The server binary is $MINIO_BIN when that is set, else the copy that
// `make test` installs in the user cache directory (see [BinaryPath]).
// Without it, tests that call Start are skipped with a hint on how to
// install it, unless DOCREPO_TEST_STRICT=1, which turns the skip into a
// failure so that CI cannot pass by testing nothing.
package miniotest
