package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/docrepo/docrepo/pkg/events"
	"github.com/docrepo/docrepo/pkg/indexing"
	"github.com/docrepo/docrepo/pkg/testenv/natstest"
)

// docrepoctl deadletter list shows a parked event with its reason, and
// retry puts it back on its original subject and out of the dead letters.
func TestDeadletterListAndRetry(t *testing.T) {
	srv := natstest.Start(t)
	js := srv.JetStream(t)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: events.StreamName, Subjects: []string{events.SubjectAll}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, indexing.DeadLetterStreamConfig(1)); err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg(indexing.DeadLetterSubjectPrefix + ".indexer.docrepo.document.updated")
	m.Header.Set(indexing.HeaderDeadSubject, "docrepo.document.updated")
	m.Header.Set(indexing.HeaderDeadReason, "the document service refuses it: bad id")
	m.Header.Set(indexing.HeaderDeadDelivered, "1")
	m.Header.Set(indexing.HeaderDeadConsumer, "indexer")
	m.Header.Set(events.HeaderAggregateID, "42")
	m.Data = []byte("payload")
	if _, err := js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"NATS_URL": srv.URL()}
	ctl := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := run(ctx, args, &out, &errOut, func(k string) string { return env[k] }); err != nil {
			t.Fatalf("docrepoctl %v: %v (%s)", args, err, errOut.String())
		}
		return out.String()
	}
	list := ctl("deadletter", "list")
	for _, want := range []string{"docrepo.document.updated", "42", "the document service refuses it: bad id"} {
		if !strings.Contains(list, want) {
			t.Fatalf("list lacks %q:\n%s", want, list)
		}
	}
	if out := ctl("deadletter", "retry", "all"); !strings.Contains(out, "retried 1") {
		t.Fatalf("retry: %s", out)
	}
	st, err := js.Stream(ctx, events.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	back, err := st.GetLastMsgForSubject(ctx, "docrepo.document.updated")
	if err != nil || string(back.Data) != "payload" || back.Header.Get(events.HeaderAggregateID) != "42" {
		t.Fatalf("the retried event in the stream: %v, %v", back, err)
	}
	if back.Header.Get(indexing.HeaderDeadReason) != "" {
		t.Fatal("the retried event carries the dead-letter headers")
	}
	if out := ctl("deadletter", "list"); !strings.Contains(out, "no parked events") {
		t.Fatalf("list after retry:\n%s", out)
	}
}
