package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Webhook is a webhook subscription (docs/api.md §10); its secret is only
// in NewWebhook.
type Webhook struct {
	WebhookID  int64     `json:"webhook_id"`
	URL        string    `json:"url"`
	EventTypes []string  `json:"event_types"`
	Owner      string    `json:"owner"`
	CreatedAt  time.Time `json:"created_at"`
	CreatedBy  string    `json:"created_by"`
	// State is active, or paused: a delivery died and nothing more is
	// sent until ResumeWebhook.
	State        string     `json:"state"`
	PausedAt     *time.Time `json:"paused_at"`
	PausedReason string     `json:"paused_reason"`
	// Pending and Dead count the deliveries in those states.
	Pending int64 `json:"pending"`
	Dead    int64 `json:"dead"`
}

// NewWebhook is the answer of CreateWebhook: the subscription and its
// signing secret, shown this once.
type NewWebhook struct {
	Webhook Webhook `json:"webhook"`
	Secret  string  `json:"secret"`
}

// WebhookSpec is a subscription to create. Secret may be empty (one is
// generated).
type WebhookSpec struct {
	URL        string   `json:"url"`
	EventTypes []string `json:"event_types"`
	Owner      string   `json:"owner"`
	Secret     string   `json:"secret,omitempty"`
}

// Delivery is one entry of a subscription's delivery log.
type Delivery struct {
	DeliveryID    int64      `json:"delivery_id"`
	WebhookID     int64      `json:"webhook_id"`
	MessageID     string     `json:"message_id"`
	EventType     string     `json:"event_type"`
	DocID         int64      `json:"doc_id"`
	State         string     `json:"state"`
	Attempts      int        `json:"attempts"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	LastStatus    int        `json:"last_status"`
	LastError     string     `json:"last_error"`
	CreatedAt     time.Time  `json:"created_at"`
	DeliveredAt   *time.Time `json:"delivered_at"`
}

// DeliveryQuery filters and pages a delivery log (newest first); zero
// values are not sent.
type DeliveryQuery struct {
	// State is pending, delivered or dead.
	State string
	// BeforeID pages backwards: deliveries older than this one.
	BeforeID int64
	// Limit is the page size (0: the gateway's default, 50).
	Limit int
}

// CreateWebhook subscribes a URL (needs the webhooks scope).
func (c *Client) CreateWebhook(ctx context.Context, spec WebhookSpec) (*NewWebhook, error) {
	return callJSON[NewWebhook](ctx, c, call{method: http.MethodPost, path: "/apiv2/pub/webhooks", json: spec})
}

// Webhooks lists the subscriptions.
func (c *Client) Webhooks(ctx context.Context) ([]Webhook, error) {
	return callSlice[Webhook](ctx, c, call{method: http.MethodGet, path: "/apiv2/pub/webhooks", retry: retryIdempotent})
}

// DeleteWebhook removes a subscription and its delivery log.
func (c *Client) DeleteWebhook(ctx context.Context, id int64) error {
	_, err := callJSON[struct{}](ctx, c, call{method: http.MethodDelete, path: fmt.Sprintf("/apiv2/pub/webhooks/%d", id)})
	return err
}

// Deliveries is a page of a subscription's delivery log, newest first.
func (c *Client) Deliveries(ctx context.Context, webhookID int64, q DeliveryQuery) ([]Delivery, error) {
	v := url.Values{}
	if q.State != "" {
		v.Set("state", q.State)
	}
	if q.BeforeID != 0 {
		v.Set("before_id", strconv.FormatInt(q.BeforeID, 10))
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return callSlice[Delivery](ctx, c, call{method: http.MethodGet, path: fmt.Sprintf("/apiv2/pub/webhooks/%d/deliveries", webhookID),
		query: v, retry: retryIdempotent})
}

// Redeliver sends a dead (or delivered) delivery again.
func (c *Client) Redeliver(ctx context.Context, webhookID, deliveryID int64) (*Delivery, error) {
	return callJSON[Delivery](ctx, c, call{method: http.MethodPost,
		path: fmt.Sprintf("/apiv2/pub/webhooks/%d/deliveries/%d/redeliver", webhookID, deliveryID)})
}

// ResumeWebhook ends a subscription's pause: its dead deliveries are sent
// again first (unless skipDead) and sending resumes. It returns the
// subscription and how many dead deliveries were requeued.
func (c *Client) ResumeWebhook(ctx context.Context, webhookID int64, skipDead bool) (*Webhook, int64, error) {
	out, err := callJSON[struct {
		Webhook  Webhook `json:"webhook"`
		Requeued int64   `json:"requeued"`
	}](ctx, c, call{method: http.MethodPost, path: fmt.Sprintf("/apiv2/pub/webhooks/%d/resume", webhookID),
		json: map[string]any{"skip_dead": skipDead}})
	if err != nil {
		return nil, 0, err
	}
	return &out.Webhook, out.Requeued, nil
}
