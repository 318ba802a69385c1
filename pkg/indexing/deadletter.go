package indexing

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Dead letters: an event the indexer cannot handle — the document service
// refuses it, or it was delivered MaxDeliver times without being settled
// (the processes handling it kept failing or dying) — is parked in a stream
// of its own instead of being retried for ever or dropped: the message
// (subject, headers, payload) with why it was parked. The rest of the
// stream goes on. `docrepoctl deadletter list` shows what is parked and
// `docrepoctl deadletter retry` publishes it again; the anti-entropy pass
// repairs what a parked event would have changed in any case.
const (
	// DeadLetterStream holds parked events. Its subjects are outside
	// docrepo.>, so parked events never reach the event stream's consumers.
	DeadLetterStream = "DOCREPO_DEADLETTER"
	// DeadLetterSubjectPrefix starts the subject of a parked event:
	// docrepo-deadletter.<consumer>.<original subject>.
	DeadLetterSubjectPrefix = "docrepo-deadletter"

	// Headers a parked event carries besides the original's.
	HeaderDeadReason    = "Docrepo-Dead-Reason"
	HeaderDeadSubject   = "Docrepo-Dead-Subject"
	HeaderDeadDelivered = "Docrepo-Dead-Delivered"
	HeaderDeadAt        = "Docrepo-Dead-At"
	HeaderDeadConsumer  = "Docrepo-Dead-Consumer"
)

// DeadLetterStreamConfig is the configuration of the dead-letter stream:
// file storage, kept 30 days.
func DeadLetterStreamConfig(replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        DeadLetterStream,
		Description: "docrepo events the indexer could not handle, with the reason (docrepoctl deadletter)",
		Subjects:    []string{DeadLetterSubjectPrefix + ".>"},
		Storage:     jetstream.FileStorage,
		MaxAge:      30 * 24 * time.Hour,
		Replicas:    max(1, replicas),
	}
}

// park copies m with its reason into the dead-letter stream and terminates
// it in the event stream. When the copy cannot be stored, m is left for
// redelivery instead (nothing is dropped).
func (ix *Indexer) park(ctx context.Context, o ConsumerOptions, m jetstream.Msg, delivered uint64, reason error) {
	if err := parkMsg(ctx, o.JetStream, o.Durable, m, delivered, reason, o.StreamReplicas); err != nil {
		ix.log.Error("parking an event failed; it will be delivered again", "subject", m.Subject(), "error", err)
		_ = m.NakWithDelay(DefaultBackoffMax)
		return
	}
	metricDeadLettered.WithLabelValues(deadReasonLabel(reason)).Inc()
	ix.log.Error("parked an event the indexer cannot handle (docrepoctl deadletter list)",
		"subject", m.Subject(), "delivered", delivered, "reason", reason)
	_ = m.Term()
}

// ensureDeadLetterStream creates the dead-letter stream when it is
// missing, and never updates it: an operator may have changed it
// (replicas, age), and that stays.
func ensureDeadLetterStream(ctx context.Context, js jetstream.JetStream, replicas int) error {
	if _, err := js.Stream(ctx, DeadLetterStream); errors.Is(err, jetstream.ErrStreamNotFound) {
		if _, err := js.CreateStream(ctx, DeadLetterStreamConfig(replicas)); err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("dead-letter stream: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("dead-letter stream: %w", err)
	}
	return nil
}

func parkMsg(ctx context.Context, js jetstream.JetStream, durable string, m jetstream.Msg, delivered uint64, reason error, replicas int) error {
	if err := ensureDeadLetterStream(ctx, js, replicas); err != nil {
		return err
	}
	out := nats.NewMsg(DeadLetterSubjectPrefix + "." + durable + "." + m.Subject())
	for k, vs := range m.Headers() {
		if k == jetstream.MsgIDHeader {
			continue
		}
		for _, v := range vs {
			out.Header.Add(k, v)
		}
	}
	out.Header.Set(HeaderDeadReason, reason.Error())
	out.Header.Set(HeaderDeadSubject, m.Subject())
	out.Header.Set(HeaderDeadDelivered, strconv.FormatUint(delivered, 10))
	out.Header.Set(HeaderDeadAt, time.Now().UTC().Format(time.RFC3339))
	out.Header.Set(HeaderDeadConsumer, durable)
	out.Data = m.Data()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := js.PublishMsg(pctx, out)
	return err
}

// errDeliveredTooOften is the reason of an event parked after MaxDeliver
// deliveries.
type errDeliveredTooOften struct{ delivered uint64 }

func (e errDeliveredTooOften) Error() string {
	return fmt.Sprintf("delivered %d times without being handled: the indexer kept failing or stopping while it handled it", e.delivered)
}

func deadReasonLabel(err error) string {
	var tooOften errDeliveredTooOften
	if errors.As(err, &tooOften) {
		return "max_deliveries"
	}
	return "refused"
}

// DeadLetter is one parked event.
type DeadLetter struct {
	// Seq is its sequence in the dead-letter stream (what retry takes).
	Seq       uint64
	Subject   string
	Consumer  string
	Reason    string
	Delivered string
	At        string
	// AggregateID is the document or folder id the event is about.
	AggregateID string
	msg         *jetstream.RawStreamMsg
}

// ListDeadLetters returns the parked events, oldest first (none when the
// stream does not exist yet).
func ListDeadLetters(ctx context.Context, js jetstream.JetStream) ([]DeadLetter, error) {
	st, err := js.Stream(ctx, DeadLetterStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return nil, err
	}
	var out []DeadLetter
	for seq := info.State.FirstSeq; seq > 0 && seq <= info.State.LastSeq; seq++ {
		raw, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // retried (deleted) or aged out
		}
		if err != nil {
			return nil, err
		}
		h := raw.Header
		out = append(out, DeadLetter{
			Seq: seq, Subject: h.Get(HeaderDeadSubject), Consumer: h.Get(HeaderDeadConsumer),
			Reason: h.Get(HeaderDeadReason), Delivered: h.Get(HeaderDeadDelivered), At: h.Get(HeaderDeadAt),
			AggregateID: h.Get("Docrepo-Aggregate-Id"), msg: raw,
		})
	}
	return out, nil
}

// RetryDeadLetter publishes parked event seq to its original subject again
// (with a new message id, so the duplicate window lets it through) and
// removes it from the dead-letter stream.
func RetryDeadLetter(ctx context.Context, js jetstream.JetStream, seq uint64) error {
	st, err := js.Stream(ctx, DeadLetterStream)
	if err != nil {
		return err
	}
	raw, err := st.GetMsg(ctx, seq)
	if err != nil {
		return fmt.Errorf("dead letter %d: %w", seq, err)
	}
	subject := raw.Header.Get(HeaderDeadSubject)
	if subject == "" {
		return fmt.Errorf("dead letter %d has no original subject", seq)
	}
	out := nats.NewMsg(subject)
	for k, vs := range raw.Header {
		if strings.HasPrefix(k, "Docrepo-Dead-") {
			continue
		}
		for _, v := range vs {
			out.Header.Add(k, v)
		}
	}
	out.Data = raw.Data
	if _, err := js.PublishMsg(ctx, out, jetstream.WithMsgID(fmt.Sprintf("retry-%d-%d", seq, time.Now().UnixNano()))); err != nil {
		return fmt.Errorf("republish dead letter %d: %w", seq, err)
	}
	return st.DeleteMsg(ctx, seq)
}
