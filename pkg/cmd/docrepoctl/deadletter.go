package main

import (
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/docrepo/docrepo/pkg/indexing"
)

func init() { deployCommands["deadletter"] = deadletterCmd }

// deadletterCmd shows and retries the events the indexer parked:
//
//	docrepoctl deadletter list
//	docrepoctl deadletter retry SEQ ... | all
//
// It connects to NATS at NATS_URL, with
// NATS_USER and NATS_PASSWORD, or NATS_CREDS, when set.
func deadletterCmd(ctx context.Context, e deployEnv) error {
	const use = "usage: docrepoctl deadletter list | deadletter retry SEQ... | deadletter retry all"
	if len(e.args) == 0 {
		return fmt.Errorf("%s", use)
	}
	url := e.NATSURL
	nc, err := nats.Connect(url, append([]nats.Option{nats.Name("docrepoctl"), nats.Timeout(10 * time.Second)}, e.NATSOptions()...)...)
	if err != nil {
		return fmt.Errorf("deadletter: connect to NATS at %s: %w", url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	parked, err := indexing.ListDeadLetters(ctx, js)
	if err != nil {
		return fmt.Errorf("deadletter: %w", err)
	}
	switch e.args[0] {
	case "list":
		if len(e.args) != 1 {
			return fmt.Errorf("%s", use)
		}
		if len(parked) == 0 {
			fmt.Fprintln(e.stdout, "no parked events")
			return nil
		}
		w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "SEQ\tPARKED AT\tSUBJECT\tID\tDELIVERIES\tCONSUMER\tREASON")
		for _, d := range parked {
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Seq, d.At, d.Subject, d.AggregateID, d.Delivered, d.Consumer, d.Reason)
		}
		return w.Flush()
	case "retry":
		var seqs []uint64
		if len(e.args) == 2 && e.args[1] == "all" {
			for _, d := range parked {
				seqs = append(seqs, d.Seq)
			}
		} else {
			for _, a := range e.args[1:] {
				n, err := strconv.ParseUint(a, 10, 64)
				if err != nil || n == 0 {
					return fmt.Errorf("deadletter retry: %q is not a sequence number (see deadletter list)", a)
				}
				seqs = append(seqs, n)
			}
		}
		if len(seqs) == 0 {
			return fmt.Errorf("%s", use)
		}
		for _, seq := range seqs {
			if err := indexing.RetryDeadLetter(ctx, js, seq); err != nil {
				return fmt.Errorf("deadletter retry: %w", err)
			}
			fmt.Fprintf(e.stdout, "retried %d\n", seq)
		}
		return nil
	}
	return fmt.Errorf("%s", use)
}
