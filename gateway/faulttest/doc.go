// Package faulttest is the fault-injection suite (issue 11): it runs the
// whole stack as `make run` does (bin/devstack: every process supervised,
// NATS a supervised child, a private Postgres cluster), uploads documents
// through the gateway like a well-behaved client (retrying with the same
// Idempotency-Key), and during the uploads kills each process with
// SIGKILL in turn (gateway, document, folder, schema, search, NATS, and
// NATS again restarted on an empty store, as a server that lost its disk)
// and crashes Postgres (pg_ctl stop -m immediate, then start). After each
// fault it counts the uploads acknowledged, the requests that failed, how
// long the process took to come back and the index to catch up; at the end
// every acknowledged upload must be stored exactly once and searchable.
// Then one user's scans fill the OCR queue while another user's text
// documents must each be searchable within seconds (the lag table;
// DOCREPO_OCR_FLOOD=1500 runs it alone with 1,500 scans:
// TestOCRFloodBesideTextUploads).
//
//	go test ./faulttest                          short: 30 uploads per fault (make test)
//	DOCREPO_FAULTS_LONG=1 go test ./faulttest    long: 150 per fault, 1,200 in all
//
// It prints its table with -v (and always in the long run); one long run's
// table is in services/search/bench/results/faults-2026-11-25.txt.
package faulttest
