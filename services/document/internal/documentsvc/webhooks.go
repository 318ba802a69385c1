package documentsvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/events"
	eventv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/event/v1"
	webhookv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/webhook/v1"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/outbox"
	"github.com/docrepo/docrepo/pkg/webhook"
)

// WebhookConsumer is the durable name of the JetStream consumer that turns
// document events into webhook deliveries.
const WebhookConsumer = "webhooks"

// WebhookConfig is how deliveries are sent (docs/configuration.md).
type WebhookConfig struct {
	// Timeout bounds one attempt.
	Timeout time.Duration
	// AllowPrivate lets deliveries reach loopback and private addresses.
	AllowPrivate bool
	// Schedule is the retry policy (exponential back-off for a period).
	Schedule webhook.Schedule
	// Workers is how many deliveries are sent at once.
	Workers int
	// Poll is how often due retries are looked for (new deliveries wake
	// the sender at once).
	Poll time.Duration
	// LogRetention is how long delivered deliveries stay in the log
	// (pending and dead ones stay until sent or their subscription goes).
	LogRetention time.Duration
	// Key and OldKeys are the sealing keys of the secrets as configured
	// (DOCREPO_WEBHOOK_KEY, DOCREPO_WEBHOOK_OLD_KEYS); Run parses them
	// into Keyring.
	Key, OldKeys string
	// Keyring seals the signing secrets at rest; nil: no key configured,
	// so no subscription can be created (and none may exist).
	Keyring *webhook.Keyring
}

// Webhook defaults.
const (
	DefaultWebhookTimeout      = 5 * time.Second
	DefaultWebhookBackoff      = 10 * time.Second
	DefaultWebhookBackoffMax   = time.Hour
	DefaultWebhookRetryPeriod  = 24 * time.Hour
	DefaultWebhookWorkers      = 16
	DefaultWebhookPoll         = time.Second
	DefaultWebhookLogRetention = 30 * 24 * time.Hour
)

func (c WebhookConfig) withDefaults() WebhookConfig {
	if c.Timeout <= 0 {
		c.Timeout = DefaultWebhookTimeout
	}
	if c.Schedule.Initial <= 0 {
		c.Schedule.Initial = DefaultWebhookBackoff
	}
	if c.Schedule.Max <= 0 {
		c.Schedule.Max = DefaultWebhookBackoffMax
	}
	if c.Schedule.Period <= 0 {
		c.Schedule.Period = DefaultWebhookRetryPeriod
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWebhookWorkers
	}
	if c.Poll <= 0 {
		c.Poll = DefaultWebhookPoll
	}
	if c.LogRetention <= 0 {
		c.LogRetention = DefaultWebhookLogRetention
	}
	return c
}

// Owners resolves a subscription's owner: the user's id and groups.
type Owners interface {
	UserGroups(ctx context.Context, username string, id int64) (int64, []int64, error)
}

// Webhooks is the webhook subscriptions' service (WebhookService), the
// consumer that turns document events into deliveries, and the sender.
type Webhooks struct {
	webhookv1.UnimplementedWebhookServiceServer
	pool   *pgxpool.Pool
	owners Owners
	cfg    WebhookConfig
	client *http.Client
	log    *slog.Logger
	now    func() time.Time
	wake   chan struct{}
	// instance names this process's sender in its claims (claimed_by);
	// alive says it holds the advisory lock that shows it is alive
	// (holdSenderLock), without which it claims nothing.
	instance int32
	alive    atomic.Bool
}

// NewWebhooks returns the webhooks of the document service on pool.
func NewWebhooks(pool *pgxpool.Pool, owners Owners, cfg WebhookConfig, log *slog.Logger) *Webhooks {
	cfg = cfg.withDefaults()
	if log == nil {
		log = slog.Default()
	}
	return &Webhooks{pool: pool, owners: owners, cfg: cfg, log: log, now: time.Now, wake: make(chan struct{}, 1), instance: rand.Int32N(math.MaxInt32) + 1,
		client: webhook.NewClient(webhook.ClientOptions{Timeout: cfg.Timeout, AllowPrivate: cfg.AllowPrivate})}
}

// documentEventTypes are the event types a subscription may name.
var documentEventTypes = []string{
	kindCreated, kindUpdated, kindFileReplaced, kindLocked, kindUnlocked, "folders_changed", kindCustomFieldsChanged,
	events.KindDeleted, events.KindRestored, events.KindPurged,
}

// folderEventTypes are the folder event types a subscription may name
// (the folder service's events).
var folderEventTypes = []string{events.KindCreated, events.KindMoved, events.KindDeleted}

func validEventType(t string) bool {
	if kind, ok := strings.CutPrefix(t, "folder."); ok {
		return kind == "*" || slices.Contains(folderEventTypes, kind)
	}
	kind, ok := strings.CutPrefix(t, "document.")
	return ok && (kind == "*" || slices.Contains(documentEventTypes, kind))
}

func errWebhookNotFound() error { return apierr.NotFound("Webhook not found") }

// CreateWebhook subscribes a URL (docs/api.md §10).
func (w *Webhooks) CreateWebhook(ctx context.Context, req *webhookv1.CreateWebhookRequest) (*webhookv1.CreateWebhookResponse, error) {
	if req.Url == nil {
		return nil, apierr.Invalid("Missing required field: url")
	}
	if req.Owner == nil {
		return nil, apierr.Invalid("Missing required field: owner")
	}
	if len(req.GetEventTypes()) == 0 {
		return nil, apierr.Invalid("Missing required field: event_types")
	}
	if err := webhook.CheckURL(req.GetUrl(), w.cfg.AllowPrivate); err != nil {
		return nil, apierr.Invalid("Invalid value for url: %v", err)
	}
	types := slices.Clone(req.GetEventTypes())
	slices.Sort(types)
	types = slices.Compact(types)
	for _, t := range types {
		if !validEventType(t) {
			return nil, apierr.Invalid("Invalid value for event_types: %q is not an event type (document.created, document.updated, ..., document.*, folder.created, folder.moved, folder.deleted or folder.*)", t)
		}
	}
	if w.cfg.Keyring == nil {
		return nil, apierr.Unavailable("Webhooks are not configured: the document service needs DOCREPO_WEBHOOK_KEY to keep their secrets sealed")
	}
	secret := req.GetSecret()
	if secret == "" {
		secret = webhook.NewSecret()
	} else if _, err := webhook.SecretKey(secret); err != nil {
		return nil, apierr.Invalid("Invalid value for secret: %v", err)
	}
	ownerID, _, err := w.owners.UserGroups(ctx, req.GetOwner(), 0)
	if errors.Is(err, identity.ErrUnknownUser) || req.GetOwner() == "" {
		return nil, apierr.Unprocessable("Unknown owner: %s", req.GetOwner())
	}
	if err != nil {
		return nil, apierr.Internal(err)
	}
	createdBy := audit.ActorOf(ctx, "").Username
	if createdBy == "" {
		createdBy = "service:" + audit.ActorOf(ctx, "").Service
	}
	out := &webhookv1.Webhook{Url: req.GetUrl(), EventTypes: types, Owner: req.GetOwner(), CreatedBy: createdBy}
	err = pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		var at time.Time
		// The id first: the sealed secret is bound to its row.
		if err := tx.QueryRow(ctx, `SELECT nextval(pg_get_serial_sequence('webhook_subscriptions', 'id'))`).Scan(&out.WebhookId); err != nil {
			return err
		}
		sealed, keyID := w.cfg.Keyring.Seal(secret, out.WebhookId)
		if err := tx.QueryRow(ctx, `INSERT INTO webhook_subscriptions (id, url, event_types, owner_id, owner_name, secret_sealed, secret_key_id, created_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING created_at`, out.WebhookId, out.Url, types, ownerID, out.Owner, sealed, keyID, createdBy).
			Scan(&at); err != nil {
			return err
		}
		out.CreatedAt = timestamppb.New(at)
		out.State = "active"
		return audit.Append(ctx, tx, audit.Entry{Action: "webhook.created", ObjectID: out.WebhookId, Details: map[string]any{
			"url": out.Url, "event_types": types, "owner": out.Owner,
		}})
	})
	if err != nil {
		return nil, internal(err)
	}
	return &webhookv1.CreateWebhookResponse{Webhook: out, Secret: secret}, nil
}

// ListWebhooks lists every subscription, without secrets.
func (w *Webhooks) ListWebhooks(ctx context.Context, _ *webhookv1.ListWebhooksRequest) (*webhookv1.ListWebhooksResponse, error) {
	hooks, err := webhooksWhere(ctx, w.pool, 0)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	return &webhookv1.ListWebhooksResponse{Webhooks: hooks}, nil
}

// webhooksWhere lists the subscriptions (id 0) or one, with their state
// and their pending and dead deliveries counted.
func webhooksWhere(ctx context.Context, q querier, id int64) ([]*webhookv1.Webhook, error) {
	rows, err := q.Query(ctx, `SELECT s.id, s.url, s.event_types, s.owner_name, s.created_at, s.created_by, s.paused_at, s.paused_reason,
			(SELECT count(*) FROM webhook_deliveries d WHERE d.subscription_id = s.id AND d.state = 'pending'),
			(SELECT count(*) FROM webhook_deliveries d WHERE d.subscription_id = s.id AND d.state = 'dead')
		FROM webhook_subscriptions s WHERE $1 = 0 OR s.id = $1 ORDER BY s.id`, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*webhookv1.Webhook, error) {
		h := &webhookv1.Webhook{State: "active"}
		var at time.Time
		var paused *time.Time
		err := r.Scan(&h.WebhookId, &h.Url, &h.EventTypes, &h.Owner, &at, &h.CreatedBy, &paused, &h.PausedReason, &h.Pending, &h.Dead)
		h.CreatedAt = timestamppb.New(at)
		if paused != nil {
			h.State, h.PausedAt = "paused", timestamppb.New(*paused)
		}
		return h, err
	})
}

// ResumeWebhook ends a subscription's pause: its dead deliveries become
// pending again, due now with a new retry period — each before the later
// deliveries of its document, which waited behind it — unless skip_dead,
// the pending ones get a new retry period, and sending resumes. Resuming an active subscription requeues its dead
// deliveries all the same.
func (w *Webhooks) ResumeWebhook(ctx context.Context, req *webhookv1.ResumeWebhookRequest) (*webhookv1.ResumeWebhookResponse, error) {
	var out *webhookv1.ResumeWebhookResponse
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		var paused *time.Time
		err := tx.QueryRow(ctx, `SELECT paused_at FROM webhook_subscriptions WHERE id = $1 FOR UPDATE`, req.GetWebhookId()).Scan(&paused)
		if errors.Is(err, pgx.ErrNoRows) {
			return errWebhookNotFound()
		}
		if err != nil {
			return err
		}
		var requeued int64
		if !req.GetSkipDead() {
			tag, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = $2, retry_since = NULL
				WHERE subscription_id = $1 AND state = 'dead'`, req.GetWebhookId(), w.now())
			if err != nil {
				return err
			}
			requeued = tag.RowsAffected()
		}
		if paused != nil {
			// The deliveries that were being retried when it paused get
			// a new retry period too: the time paused is not time they
			// failed, and after a long pause their first failure would
			// kill them at once.
			if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET retry_since = NULL
				WHERE subscription_id = $1 AND state = 'pending' AND retry_since IS NOT NULL`, req.GetWebhookId()); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE webhook_subscriptions SET paused_at = NULL, paused_reason = '' WHERE id = $1`, req.GetWebhookId()); err != nil {
			return err
		}
		if err := audit.Append(ctx, tx, audit.Entry{Action: "webhook.resumed", ObjectID: req.GetWebhookId(),
			Details: map[string]any{"was_paused": paused != nil, "requeued": requeued, "skip_dead": req.GetSkipDead()}}); err != nil {
			return err
		}
		hooks, err := webhooksWhere(ctx, tx, req.GetWebhookId())
		if err != nil || len(hooks) != 1 {
			return fmt.Errorf("reading webhook %d back: %d rows, %w", req.GetWebhookId(), len(hooks), err)
		}
		out = &webhookv1.ResumeWebhookResponse{Webhook: hooks[0], Requeued: requeued}
		return nil
	})
	if err != nil {
		return nil, internal(err)
	}
	w.nudge()
	return out, nil
}

// DeleteWebhook removes a subscription and its delivery log.
func (w *Webhooks) DeleteWebhook(ctx context.Context, req *webhookv1.DeleteWebhookRequest) (*webhookv1.DeleteWebhookResponse, error) {
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		var url string
		err := tx.QueryRow(ctx, `DELETE FROM webhook_subscriptions WHERE id = $1 RETURNING url`, req.GetWebhookId()).Scan(&url)
		if errors.Is(err, pgx.ErrNoRows) {
			return errWebhookNotFound()
		}
		if err != nil {
			return err
		}
		return audit.Append(ctx, tx, audit.Entry{Action: "webhook.deleted", ObjectID: req.GetWebhookId(), Details: map[string]any{"url": url}})
	})
	if err != nil {
		return nil, internal(err)
	}
	return &webhookv1.DeleteWebhookResponse{WebhookId: req.GetWebhookId()}, nil
}

const deliveryColumns = `id, subscription_id, event_id, event_type, doc_id, state, attempts, next_attempt_at, last_status,
	last_error, created_at, delivered_at, folder_id`

func scanDelivery(r pgx.CollectableRow) (*webhookv1.Delivery, error) {
	d := &webhookv1.Delivery{}
	var eventID string
	var next, created time.Time
	var delivered *time.Time
	err := r.Scan(&d.DeliveryId, &d.WebhookId, &eventID, &d.EventType, &d.DocId, &d.State, &d.Attempts, &next,
		&d.LastStatus, &d.LastError, &created, &delivered, &d.FolderId)
	d.MessageId = messageID(d.DeliveryId)
	d.CreatedAt = timestamppb.New(created)
	if d.State == "pending" {
		d.NextAttemptAt = timestamppb.New(next)
	}
	if delivered != nil {
		d.DeliveredAt = timestamppb.New(*delivered)
	}
	return d, err
}

// messageID is the webhook-id of a delivery: the same on every attempt.
func messageID(deliveryID int64) string { return "msg_" + strconv.FormatInt(deliveryID, 10) }

// ListDeliveries is a subscription's delivery log, newest first.
func (w *Webhooks) ListDeliveries(ctx context.Context, req *webhookv1.ListDeliveriesRequest) (*webhookv1.ListDeliveriesResponse, error) {
	limit := int32(50)
	if req.Limit != nil {
		if req.GetLimit() < 1 || req.GetLimit() > 500 {
			return nil, apierr.Invalid("Invalid value for limit: must be 1..500")
		}
		limit = req.GetLimit()
	}
	if s := req.GetState(); s != "" && s != "pending" && s != "delivered" && s != "dead" {
		return nil, apierr.Invalid("Invalid value for state: must be pending, delivered or dead")
	}
	if err := w.checkWebhook(ctx, req.GetWebhookId()); err != nil {
		return nil, err
	}
	rows, err := w.pool.Query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries
		WHERE subscription_id = $1 AND ($2 = '' OR state = $2) AND ($3 = 0 OR id < $3)
		ORDER BY id DESC LIMIT $4`, req.GetWebhookId(), req.GetState(), req.GetBeforeId(), limit)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	ds, err := pgx.CollectRows(rows, scanDelivery)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	return &webhookv1.ListDeliveriesResponse{Deliveries: ds}, nil
}

func (w *Webhooks) checkWebhook(ctx context.Context, id int64) error {
	var ok bool
	if err := w.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhook_subscriptions WHERE id = $1)`, id).Scan(&ok); err != nil {
		return apierr.Internal(err)
	}
	if !ok {
		return errWebhookNotFound()
	}
	return nil
}

// Redeliver makes a dead (or delivered) delivery pending again, due now,
// with a new retry period (sent once its subscription is active).
func (w *Webhooks) Redeliver(ctx context.Context, req *webhookv1.RedeliverRequest) (*webhookv1.RedeliverResponse, error) {
	if err := w.checkWebhook(ctx, req.GetWebhookId()); err != nil {
		return nil, err
	}
	var out *webhookv1.Delivery
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		var state string
		err := tx.QueryRow(ctx, `SELECT state FROM webhook_deliveries WHERE id = $1 AND subscription_id = $2 FOR UPDATE`,
			req.GetDeliveryId(), req.GetWebhookId()).Scan(&state)
		if errors.Is(err, pgx.ErrNoRows) {
			return apierr.NotFound("Delivery not found")
		}
		if err != nil {
			return err
		}
		if state == "pending" {
			return apierr.Conflict("The delivery is pending already")
		}
		rows, err := tx.Query(ctx, `UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = $2, retry_since = NULL
			WHERE id = $1 RETURNING `+deliveryColumns, req.GetDeliveryId(), w.now())
		if err != nil {
			return err
		}
		if out, err = pgx.CollectExactlyOneRow(rows, scanDelivery); err != nil {
			return err
		}
		return audit.Append(ctx, tx, audit.Entry{Action: "webhook.redelivered", ObjectID: req.GetWebhookId(),
			Details: map[string]any{"delivery_id": req.GetDeliveryId(), "was": state}})
	})
	if err != nil {
		return nil, internal(err)
	}
	w.nudge()
	return &webhookv1.RedeliverResponse{Delivery: out}, nil
}

func (w *Webhooks) nudge() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// The consumer.

// webhookBatch is how many events one fetch takes: one transaction makes
// their deliveries.
const webhookBatch = 100

// webhookConsumeLockID is the advisory lock key that makes one replica at
// a time the active consumer of the webhook events: it holds the lock on
// a connection of its own for as long as it consumes (the others wait for
// it, each in one blocked query), and checks that this session is alive
// before making the deliveries of each batch. JetStream hands the events
// out to the waiting fetches of every replica in turn (a fetch of 100
// does not stop another's while fewer are pending, whatever
// MaxAckPending), so without it two replicas made the deliveries of
// alternate events, each in its own transaction, and a document's later
// event could get the earlier delivery id and be sent first; and a
// replica's acknowledgement (AckAll) of its batch acknowledged the other's
// events still being handled, lost if that replica then died. (Until
// 2026-11-26 each batch took and gave back the lock: four round trips per
// fetch and replica, 40 a second each while idle.)
const webhookConsumeLockID = 0x77656268 // "wehb"

// ConsumeWebhookEvents turns document events into deliveries until ctx
// ends, creating the consumer (and the stream) again when they vanish.
func (w *Webhooks) ConsumeWebhookEvents(ctx context.Context, js jetstream.JetStream, streamOpts ...outbox.StreamOption) error {
	wait := 100 * time.Millisecond
	for ctx.Err() == nil {
		stream, err := outbox.EnsureStream(ctx, js, streamOpts...)
		var cons jetstream.Consumer
		if err == nil {
			cons, err = stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
				Durable:        WebhookConsumer,
				FilterSubjects: []string{events.SubjectDocuments, events.SubjectFolders},
				// Subscriptions see what happens after they exist; the
				// consumer's first start is their beginning.
				DeliverPolicy: jetstream.DeliverNewPolicy,
				AckPolicy:     jetstream.AckAllPolicy,
				AckWait:       30 * time.Second,
				MaxAckPending: webhookBatch,
			})
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			w.log.Warn("webhook events consumer not ready; retrying", "error", err, "retry_in", wait)
			if !sleepCtx(ctx, wait) {
				return nil
			}
			wait = min(2*wait, 10*time.Second)
			continue
		}
		wait = 100 * time.Millisecond
		w.consume(ctx, js, cons)
	}
	return nil
}

// consume is the active consumer (webhookConsumeLockID) until ctx ends or
// the consumer is gone, waiting for its turn first.
func (w *Webhooks) consume(ctx context.Context, js jetstream.JetStream, cons jetstream.Consumer) {
	for ctx.Err() == nil {
		gone, err := w.consumeActive(ctx, js, cons)
		if gone {
			return
		}
		if err != nil && ctx.Err() == nil {
			w.log.Warn("consuming webhook events as the active replica failed; retrying", "error", err)
			sleepCtx(ctx, time.Second)
		}
	}
}

// consumeActive waits for the lock on a connection of its own, then, as
// the active consumer, fetches batches, makes their deliveries and
// acknowledges them until ctx ends, the consumer is gone (gone) or the
// session holding the lock is lost (err). Closing the connection gives
// the lock back.
func (w *Webhooks) consumeActive(ctx context.Context, js jetstream.JetStream, cons jetstream.Consumer) (gone bool, err error) {
	conn, err := pgx.ConnectConfig(ctx, w.pool.Config().ConnConfig.Copy())
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	// Waiting for the turn outlasts any statement timeout.
	if _, err := conn.Exec(ctx, `SELECT set_config('statement_timeout', '0', false)`); err != nil {
		return false, err
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, webhookConsumeLockID); err != nil {
		return false, err
	}
	w.reclaim(ctx, js, cons)
	// held checks, in one round trip, that this session is alive and
	// holds the lock: a session lost (Postgres restarted, the connection
	// cut) gave it back, and another replica may be consuming now.
	held := func() error {
		var ok bool
		err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND pid = pg_backend_pid() AND classid = 0 AND objid = $1::bigint::oid AND objsubid = 1)`, webhookConsumeLockID).Scan(&ok)
		if err == nil && !ok {
			err = errors.New("the session no longer holds the webhook consumer's lock")
		}
		return err
	}
	for ctx.Err() == nil {
		msgs, gone := w.fetchBatch(ctx, cons)
		if gone {
			return true, nil
		}
		if len(msgs) == 0 {
			continue
		}
		if err := w.handleHeld(ctx, msgs, held); err != nil {
			// Given back at once (not after the ack wait) to whoever is
			// active now.
			for _, m := range msgs {
				_ = m.Nak()
			}
			return false, err
		}
	}
	return false, nil
}

// reclaimTimeout bounds the consumer reset (a NATS server before 2.14
// does not answer it).
const reclaimTimeout = 5 * time.Second

// reclaim makes the events the previous active consumer held
// unacknowledged deliverable again at once, in order: that replica died
// (or lost its session) between fetching them and acknowledging their
// deliveries. Without it they came again only after the ack wait, and
// meanwhile this consumer's acknowledgement of later events (AckAll)
// acknowledged them too: their deliveries were never made (the
// fault-injection test TestWebhooksSurviveKilledDocumentService). Those
// whose deliveries were made come again too; making them again does
// nothing (one delivery per subscription and event).
func (w *Webhooks) reclaim(ctx context.Context, js jetstream.JetStream, cons jetstream.Consumer) {
	rctx, cancel := context.WithTimeout(ctx, reclaimTimeout)
	defer cancel()
	info, err := cons.Info(rctx)
	if err != nil || info.NumAckPending == 0 {
		return
	}
	resp, err := js.ResetConsumer(rctx, info.Stream, info.Name)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("could not reclaim the webhook events the previous consumer held (NATS 2.14 or newer can); they come again after the ack wait, and later events acknowledged before them are lost",
				"held", info.NumAckPending, "error", err)
		}
		return
	}
	w.log.Info("reclaimed the webhook events the previous consumer held unacknowledged", "held", info.NumAckPending, "from_stream_seq", resp.ResetSeq)
}

// fetchBatch fetches one batch; gone: the consumer is.
func (w *Webhooks) fetchBatch(ctx context.Context, cons jetstream.Consumer) (msgs []jetstream.Msg, gone bool) {
	// A short wait: a fetch returns when the batch is full or the wait
	// is over, and the wait is the events' lag at a low rate.
	batch, err := cons.Fetch(webhookBatch, jetstream.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
			w.log.Warn("the webhook events consumer is gone; creating it again", "error", err)
			return nil, true
		}
		if ctx.Err() == nil {
			w.log.Warn("fetching webhook events", "error", err)
			sleepCtx(ctx, time.Second)
		}
		return nil, false
	}
	for m := range batch.Messages() {
		msgs = append(msgs, m)
	}
	if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && ctx.Err() == nil {
		if _, ierr := cons.Info(ctx); errors.Is(ierr, jetstream.ErrConsumerNotFound) || errors.Is(ierr, jetstream.ErrStreamNotFound) {
			return msgs, true
		}
	}
	return msgs, false
}

// handleHeld makes the deliveries of a batch and acknowledges it, while
// held says this replica is still the active consumer. A failure (the
// database) is retried here, in order, rather than left for redelivery,
// which could reorder the events.
func (w *Webhooks) handleHeld(ctx context.Context, msgs []jetstream.Msg, held func() error) error {
	for wait := 200 * time.Millisecond; ; wait = min(2*wait, 10*time.Second) {
		if err := held(); err != nil {
			return err
		}
		err := w.handleBatch(ctx, msgs)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		w.log.Warn("making webhook deliveries failed; retrying", "events", len(msgs), "error", err)
		_ = msgs[len(msgs)-1].InProgress()
		sleepCtx(ctx, wait)
	}
	if err := msgs[len(msgs)-1].Ack(); err != nil {
		w.log.Warn("acknowledging webhook events failed; they will come again (their deliveries are not made twice)", "error", err)
	}
	w.nudge()
	return nil
}

// subscription is what the consumer needs of one.
type subscription struct {
	id      int64
	ownerID int64
	types   []string
}

func (s subscription) wants(eventType string) bool {
	aggregate, _, _ := strings.Cut(eventType, ".")
	return slices.Contains(s.types, eventType) || slices.Contains(s.types, aggregate+".*")
}

// handleBatch makes the deliveries of a batch of events in one
// transaction: for each event, one per subscription that wants its type
// and whose owner shares a group with the document (its groups now, or at
// its creation once purged) or with the folder (the groups its event
// carries).
func (w *Webhooks) handleBatch(ctx context.Context, msgs []jetstream.Msg) error {
	type item struct {
		msgID    string
		evtType  string
		docID    int64
		folderID int64
		groups   []int64 // a folder event's; documents' are looked up
		data     map[string]any
		at       time.Time
	}
	var items []item
	for _, m := range msgs {
		aggregate, _, err := events.ParseSubject(m.Subject())
		var it item
		var eventID int64
		switch {
		case err != nil:
		case aggregate == outbox.AggregateFolder:
			var ev *eventv1.FolderEvent
			if ev, err = events.DecodeFolderEvent(m); err == nil {
				eventID = ev.GetEventId()
				it = item{evtType: "folder." + ev.GetKind(), folderID: ev.GetFolderId(), groups: ev.GetGroupIds(),
					at: ev.GetOccurredAt().AsTime(), data: map[string]any{"folder_id": ev.GetFolderId(),
						"actor_user_id": ev.GetActorUserId(), "request_id": ev.GetRequestId()}}
				// A deletion's subtree (FolderIds) is not sent: the event
				// carries the groups of the deleted folder only, and the
				// owner, sharing one of them, may not see every folder
				// below it, whose ids would then reach the receiver.
			}
		default:
			var ev *eventv1.DocumentEvent
			if ev, err = events.DecodeDocumentEvent(m); err == nil {
				eventID = ev.GetEventId()
				it = item{evtType: "document." + ev.GetKind(), docID: ev.GetDocId(), at: ev.GetOccurredAt().AsTime(),
					data: map[string]any{"doc_id": ev.GetDocId(), "rev": ev.GetRev(),
						"actor_user_id": ev.GetActorUserId(), "request_id": ev.GetRequestId()}}
			}
		}
		if err != nil {
			w.log.Error("skipping a message that is not a document or folder event", "subject", m.Subject(), "error", err)
			continue
		}
		it.msgID = m.Headers().Get(jetstream.MsgIDHeader)
		if it.msgID == "" { // the relay always sets it; the writer's schema is the aggregate's owner
			it.msgID = outbox.MsgID(aggregate, eventID)
		}
		it.data["event_id"] = it.msgID
		items = append(items, it)
	}
	if len(items) == 0 {
		return nil
	}
	rows, err := w.pool.Query(ctx, `SELECT id, owner_id, event_types FROM webhook_subscriptions ORDER BY id`)
	if err != nil {
		return err
	}
	subs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (subscription, error) {
		var s subscription
		return s, r.Scan(&s.id, &s.ownerID, &s.types)
	})
	if err != nil || len(subs) == 0 {
		return err
	}
	var docIDs []int64
	for _, it := range items {
		if it.docID != 0 {
			docIDs = append(docIDs, it.docID)
		}
	}
	docGroups := map[int64][]int64{}
	if len(docIDs) > 0 {
		if docGroups, err = groupsOfDocuments(ctx, w.pool, docIDs); err != nil {
			return err
		}
	}
	ownerGroups := map[int64][]int64{}
	b := &pgx.Batch{}
	for _, it := range items {
		groups := it.groups
		if it.docID != 0 {
			groups = docGroups[it.docID]
		}
		for _, s := range subs {
			if !s.wants(it.evtType) {
				continue
			}
			owner, ok := ownerGroups[s.ownerID]
			if !ok {
				_, owner, err = w.owners.UserGroups(ctx, "", s.ownerID)
				if err != nil && !errors.Is(err, identity.ErrUnknownUser) {
					return err
				}
				ownerGroups[s.ownerID] = owner
			}
			if !sharesGroup(owner, groups) {
				continue
			}
			payload, err := json.Marshal(map[string]any{
				"type":      it.evtType,
				"timestamp": it.at.UTC().Format(time.RFC3339Nano),
				"data":      it.data,
			})
			if err != nil {
				return err
			}
			b.Queue(`INSERT INTO webhook_deliveries (subscription_id, event_id, event_type, doc_id, folder_id, payload)
				VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (subscription_id, event_id) DO NOTHING`,
				s.id, it.msgID, it.evtType, it.docID, it.folderID, string(payload))
		}
	}
	if b.Len() == 0 {
		return nil
	}
	return pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error { return tx.SendBatch(ctx, b).Close() })
}

// groupsOfDocuments returns the groups of each document: from
// document_groups, or, for a document already purged (its rows gone),
// from its creation's audit entry, which outlives it.
func groupsOfDocuments(ctx context.Context, q querier, ids []int64) (map[int64][]int64, error) {
	out := map[int64][]int64{}
	rows, err := q.Query(ctx, `SELECT doc_id, array_agg(group_id) FROM document_groups WHERE doc_id = ANY($1) GROUP BY doc_id`, ids)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int64
		var gs []int64
		if err := rows.Scan(&id, &gs); err != nil {
			rows.Close()
			return nil, err
		}
		out[id] = gs
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var gone []int64
	for _, id := range ids {
		if _, ok := out[id]; !ok {
			gone = append(gone, id)
		}
	}
	if len(gone) == 0 {
		return out, nil
	}
	created, err := audit.In("").FirstDetails(ctx, q, "document.created", gone)
	if err != nil {
		return nil, err
	}
	for id, d := range created {
		var c struct {
			GroupIDs []int64 `json:"group_ids"`
		}
		_ = json.Unmarshal(d, &c)
		out[id] = c.GroupIDs
	}
	return out, nil
}

func sharesGroup(a, b []int64) bool {
	for _, g := range a {
		if slices.Contains(b, g) {
			return true
		}
	}
	return false
}

// The sender.

// claimed is a delivery taken for an attempt.
type claimed struct {
	id, subID  int64
	attempts   int
	retrySince time.Time
	payload    []byte
	url        string
	sealed     []byte
	keyID      string
}

// RunDeliveries sends due deliveries until ctx ends: at most Workers at
// once, and per subscription and document one at a time, in order (a
// delivery waits while an earlier one of its document is pending).
// Claims are made for up to four times Workers (a claim query scans the
// pending deliveries; one per delivery would bound the rate), and the
// claimed wait for a free worker well within their lease.
func (w *Webhooks) RunDeliveries(ctx context.Context) error {
	sem := make(chan struct{}, w.cfg.Workers)
	capacity := 4 * w.cfg.Workers
	var inflight atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(w.cfg.Poll)
	defer tick.Stop()
	wg.Go(func() { w.holdSenderLock(ctx) })
	var pruned time.Time
	for ctx.Err() == nil {
		if now := w.now(); now.Sub(pruned) >= pruneInterval {
			if n, err := w.pruneLog(ctx); err != nil && ctx.Err() == nil {
				w.log.Warn("pruning the webhook delivery log failed; will retry", "error", err)
			} else {
				pruned = now
				if n > 0 {
					w.log.Info("pruned the webhook delivery log", "removed", n)
				}
			}
		}
		free := capacity - int(inflight.Load())
		var batch []claimed
		if free >= capacity/4 && w.alive.Load() {
			var err error
			if batch, err = w.claim(ctx, free); err != nil && ctx.Err() == nil {
				w.log.Warn("claiming webhook deliveries failed; will retry", "error", err)
			}
		}
		for _, c := range batch {
			w.log.Debug("webhook delivery claimed", "delivery_id", c.id, "webhook_id", c.subID, "attempts", c.attempts,
				"retry_since", c.retrySince)
			inflight.Add(1)
			wg.Go(func() {
				defer func() { inflight.Add(-1); w.nudge() }()
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return // the lease brings it back
				}
				defer func() { <-sem }()
				w.attempt(ctx, c)
			})
		}
		if len(batch) == free && free > 0 {
			continue // more may be due
		}
		select {
		case <-ctx.Done():
		case <-w.wake:
		case <-tick.C:
		}
	}
	return nil
}

// webhookSenderLockClass is the first key of the advisory lock each
// document process's sender holds for its life, its instance the second:
// a claim (claimed_by) whose instance holds no such lock in this database
// is a dead process's.
const webhookSenderLockClass = 0x77656273 // "webs"

// senderSweep is how often the sender looks for claims of dead processes
// (also once as it starts).
const senderSweep = 5 * time.Second

// holdSenderLock holds the sender's advisory lock on a connection of its
// own until ctx ends (alive meanwhile), taking it again after a lost
// session, and with it takes back the claims of dead processes: their
// deliveries are due at once rather than after their lease (the attempt
// timeout + 30 s), so a document service killed mid-delivery (SIGKILL, the
// OOM killer) delays that delivery and its document's later ones by its
// restart, not by the lease. A sender that lost its session claims
// nothing until it holds the lock again (its attempts in flight may then
// be sent twice, as at-least-once allows).
func (w *Webhooks) holdSenderLock(ctx context.Context) {
	defer w.alive.Store(false)
	for ctx.Err() == nil {
		err := w.senderSession(ctx)
		w.alive.Store(false)
		if ctx.Err() != nil {
			return
		}
		w.log.Warn("the webhook sender's liveness session failed; claiming nothing until it is back", "error", err)
		sleepCtx(ctx, time.Second)
	}
}

func (w *Webhooks) senderSession(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, w.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1::int4, $2::int4)`, int32(webhookSenderLockClass), w.instance); err != nil {
		return err
	}
	w.alive.Store(true)
	t := time.NewTicker(senderSweep)
	defer t.Stop()
	for {
		tag, err := conn.Exec(ctx, `UPDATE webhook_deliveries d SET next_attempt_at = $1, claimed_by = NULL
			WHERE d.claimed_by IS NOT NULL AND d.state = 'pending' AND NOT EXISTS (
			    SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
			      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			      AND l.classid = $2::int4::oid AND l.objid = d.claimed_by::oid)`, w.now(), int32(webhookSenderLockClass))
		if err != nil {
			return err
		}
		if n := tag.RowsAffected(); n > 0 {
			w.log.Info("took back the webhook deliveries a stopped process was sending; they are sent again", "deliveries", n)
			w.nudge()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// pruneInterval is how often delivered deliveries past the retention
// leave the log.
const pruneInterval = time.Hour

// pruneLog removes the delivered deliveries older than the retention.
func (w *Webhooks) pruneLog(ctx context.Context) (int64, error) {
	tag, err := w.pool.Exec(ctx, `DELETE FROM webhook_deliveries WHERE state = 'delivered' AND delivered_at < $1`,
		w.now().Add(-w.cfg.LogRetention))
	return tag.RowsAffected(), err
}

// claim takes up to n due deliveries of active subscriptions: each the
// earliest pending one of its subscription and document, leased for one
// attempt (a process dying mid-attempt leaves it due again after the
// lease).
func (w *Webhooks) claim(ctx context.Context, n int) ([]claimed, error) {
	now := w.now()
	lease := w.cfg.Timeout + 30*time.Second
	rows, err := w.pool.Query(ctx, `WITH due AS (
			SELECT d.id FROM webhook_deliveries d
			WHERE d.state = 'pending' AND d.next_attempt_at <= $1
			  AND NOT EXISTS (SELECT 1 FROM webhook_subscriptions p WHERE p.id = d.subscription_id AND p.paused_at IS NOT NULL)
			  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.subscription_id = d.subscription_id
			                  AND e.doc_id = d.doc_id AND e.state = 'pending' AND e.id < d.id)
			ORDER BY d.next_attempt_at, d.id LIMIT $2 FOR UPDATE OF d SKIP LOCKED)
		UPDATE webhook_deliveries d SET next_attempt_at = $3, retry_since = coalesce(d.retry_since, $1), claimed_by = $4
		FROM due, webhook_subscriptions s WHERE d.id = due.id AND s.id = d.subscription_id
		RETURNING d.id, d.subscription_id, d.attempts, d.retry_since, d.payload::text, s.url, s.secret_sealed, s.secret_key_id`,
		now, n, now.Add(lease), w.instance)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (claimed, error) {
		var c claimed
		var payload string
		var keyID *string
		err := r.Scan(&c.id, &c.subID, &c.attempts, &c.retrySince, &payload, &c.url, &c.sealed, &keyID)
		if keyID != nil {
			c.keyID = *keyID
		}
		c.payload = []byte(payload)
		return c, err
	})
}

// attempt sends one delivery and records the outcome: delivered, or the
// next attempt by the schedule, or dead past the retry period.
func (w *Webhooks) attempt(ctx context.Context, c claimed) {
	now := w.now()
	secret, err := w.openSecret(c)
	var req *http.Request
	if err == nil {
		req, err = webhook.Request(ctx, c.url, secret, messageID(c.id), now, c.payload)
	}
	res := webhook.Result{Err: err}
	if err == nil {
		res = webhook.Send(w.client, req)
	}
	if ctx.Err() != nil {
		w.log.Debug("webhook attempt abandoned at shutdown; its lease brings it back", "delivery_id", c.id)
		return // shutting down: the lease brings it back
	}
	done := w.now()
	attempts := c.attempts + 1
	if res.OK() {
		_, err = w.pool.Exec(ctx, `UPDATE webhook_deliveries SET state = 'delivered', attempts = $2, last_status = $3,
			last_error = '', delivered_at = $4, claimed_by = NULL WHERE id = $1`, c.id, attempts, res.Status, done)
	} else {
		next, dead := w.cfg.Schedule.Next(attempts, c.retrySince, done)
		state := "pending"
		if dead {
			state, next = "dead", done
		}
		msg := storableText(res.Err.Error(), 500)
		err = pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET state = $2, attempts = $3, last_status = $4, last_error = $5,
				next_attempt_at = $6, claimed_by = NULL WHERE id = $1`, c.id, state, attempts, res.Status, msg, next); err != nil || !dead {
				return err
			}
			return w.pause(ctx, tx, c, attempts, msg, done)
		})
		w.log.Info("webhook delivery failed", "delivery_id", c.id, "webhook_id", c.subID, "attempts", attempts,
			"status", res.Status, "dead", dead, "next_attempt_at", next, "error", msg)
	}
	if err != nil && ctx.Err() == nil {
		w.log.Warn("recording a webhook attempt failed; the delivery is tried again after its lease", "delivery_id", c.id, "error", fmt.Errorf("record: %w", err))
	}
}

// storableText is s as a text column takes it, at most max bytes: an
// error quoting a receiver's answer may hold a NUL, bytes that are not
// UTF-8, or a character the cap would cut in two, which Postgres refuses
// (and an attempt not recorded is never counted: tried again every
// lease, it would never die).
func storableText(s string, max int) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}

// pause pauses the subscription of a delivery that just died, in the
// transaction recording its death: sending the document's later events
// (or any other) would let the receiver miss this one without knowing.
// Already paused, it stays paused for its first reason.
func (w *Webhooks) pause(ctx context.Context, tx pgx.Tx, c claimed, attempts int, msg string, at time.Time) error {
	reason := fmt.Sprintf("delivery %d failed %d times over the retry period: %s", c.id, attempts, msg)
	tag, err := tx.Exec(ctx, `UPDATE webhook_subscriptions SET paused_at = $2, paused_reason = $3 WHERE id = $1 AND paused_at IS NULL`,
		c.subID, at, reason)
	if err != nil || tag.RowsAffected() == 0 {
		return err
	}
	w.log.Warn("webhook paused: a delivery died; nothing more is sent to it until it is resumed", "webhook_id", c.subID,
		"delivery_id", c.id, "error", msg)
	return audit.Append(ctx, tx, audit.Entry{Action: "webhook.paused", ObjectID: c.subID, Service: "webhooks",
		Details: map[string]any{"delivery_id": c.id, "reason": reason}})
}

// openSecret opens the signing secret of a claimed delivery.
func (w *Webhooks) openSecret(c claimed) (string, error) {
	if w.cfg.Keyring == nil {
		return "", errors.New("no DOCREPO_WEBHOOK_KEY to open the signing secret with")
	}
	if c.sealed == nil {
		return "", errors.New("the signing secret is not sealed yet (the document service seals it at start)")
	}
	return w.cfg.Keyring.Open(c.sealed, c.keyID, c.subID)
}

// SealSecrets is the second half of migration 0009, which SQL cannot do
// without the key: it seals every secret still in clear and seals again
// every one sealed under an old key, under the current key. Without a key
// it fails when any subscription exists (DOCREPO_WEBHOOK_KEY is required
// once webhooks are used); with one, it fails on a secret sealed under a
// key it does not hold. It returns how many rows it sealed. Replicas
// starting together each lock the rows they seal; doing it twice is
// harmless.
func (w *Webhooks) SealSecrets(ctx context.Context) (int, error) {
	k := w.cfg.Keyring
	if k == nil {
		var n int
		if err := w.pool.QueryRow(ctx, `SELECT count(*) FROM webhook_subscriptions`).Scan(&n); err != nil {
			return 0, err
		}
		if n > 0 {
			return 0, fmt.Errorf("%d webhook subscriptions exist but DOCREPO_WEBHOOK_KEY is not set: their signing secrets cannot be sealed or opened (docs/operations.md, \"Webhook secrets\")", n)
		}
		return 0, nil
	}
	sealed := 0
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id, secret, secret_sealed, secret_key_id FROM webhook_subscriptions
			WHERE secret IS NOT NULL OR secret_key_id IS DISTINCT FROM $1 ORDER BY id FOR UPDATE`, k.CurrentID())
		if err != nil {
			return err
		}
		type row struct {
			id     int64
			clear  *string
			sealed []byte
			keyID  *string
		}
		todo, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			return x, r.Scan(&x.id, &x.clear, &x.sealed, &x.keyID)
		})
		if err != nil {
			return err
		}
		for _, x := range todo {
			var secret string
			switch {
			case x.clear != nil:
				secret = *x.clear
			case x.sealed != nil && x.keyID != nil:
				if secret, err = k.Open(x.sealed, *x.keyID, x.id); err != nil {
					return fmt.Errorf("webhook subscription %d: %w", x.id, err)
				}
			default:
				return fmt.Errorf("webhook subscription %d has no secret", x.id)
			}
			s, id := k.Seal(secret, x.id)
			if _, err := tx.Exec(ctx, `UPDATE webhook_subscriptions SET secret = NULL, secret_sealed = $2, secret_key_id = $3 WHERE id = $1`,
				x.id, s, id); err != nil {
				return err
			}
			sealed++
		}
		return nil
	})
	return sealed, err
}
