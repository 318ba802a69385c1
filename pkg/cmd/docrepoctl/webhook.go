package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/docrepo/docrepo/pkg/client"
)

// webhookCmd manages webhook subscriptions through the REST API (an API
// key with the webhooks scope):
//
//	docrepoctl webhook add -owner USER -events T1,T2 [-secret whsec_...] URL
//	docrepoctl webhook list
//	docrepoctl webhook rm ID
//	docrepoctl webhook deliveries [-state S] [-limit N] [-before ID] ID
//	docrepoctl webhook redeliver ID DELIVERY_ID
//	docrepoctl webhook resume [-skip-dead] ID
func webhookCmd(ctx context.Context, e deployEnv) error {
	if len(e.args) == 0 {
		return errors.New("webhook: add, list, rm, deliveries, redeliver or resume")
	}
	sub, args := e.args[0], e.args[1:]
	var (
		baseURL, token, owner, events, secret, state string
		limit                                        int
		before                                       int64
		skipDead                                     bool
	)
	pos, err := parseArgs("webhook "+sub, args, func(fs *flag.FlagSet) {
		fs.StringVar(&baseURL, "url", e.apiURL, "gateway base URL (env DOCREPO_URL)")
		fs.StringVar(&token, "token", e.apiToken, "API key with the webhooks scope (env DOCREPO_TOKEN)")
		if sub == "add" {
			fs.StringVar(&owner, "owner", "", "the user whose visibility filters what is sent")
			fs.StringVar(&events, "events", "document.*", "event types, comma-separated (document.created, ..., document.*, folder.created, folder.moved, folder.deleted, folder.*)")
			fs.StringVar(&secret, "secret", "", "signing secret (whsec_ and base64 of 24 to 64 bytes); default: generated")
		}
		if sub == "resume" {
			fs.BoolVar(&skipDead, "skip-dead", false, "leave the dead deliveries dead (default: send them again first)")
		}
		if sub == "deliveries" {
			fs.StringVar(&state, "state", "", "only pending, delivered or dead deliveries")
			fs.IntVar(&limit, "limit", 50, "deliveries to show (1..500)")
			fs.Int64Var(&before, "before", 0, "only deliveries older than this delivery id (paging)")
		}
	})
	if err != nil {
		return err
	}
	if baseURL == "" || token == "" {
		return errors.New("webhook: -url (DOCREPO_URL) and -token (DOCREPO_TOKEN) are required")
	}
	api, err := client.New(baseURL, token)
	if err != nil {
		return fmt.Errorf("webhook: -url: %w", err)
	}
	ids := func(n int) ([]int64, error) {
		if err := exactly("webhook "+sub, pos, n); err != nil {
			return nil, err
		}
		out := make([]int64, n)
		for i, p := range pos {
			if out[i], err = strconv.ParseInt(p, 10, 64); err != nil || out[i] <= 0 {
				return nil, fmt.Errorf("webhook %s: %q is not an id", sub, p)
			}
		}
		return out, nil
	}
	switch sub {
	case "add":
		if err := exactly("webhook add", pos, 1); err != nil {
			return err
		}
		if owner == "" {
			return errors.New("webhook add: -owner is required")
		}
		h, err := api.CreateWebhook(ctx, client.WebhookSpec{URL: pos[0], Owner: owner, EventTypes: strings.Split(events, ","), Secret: secret})
		if err != nil {
			return fmt.Errorf("webhook add: %w", err)
		}
		fmt.Fprintf(e.stdout, "webhook %d: %s for %s (%s)\nsecret (shown once): %s\n", h.Webhook.WebhookID, h.Webhook.URL,
			h.Webhook.Owner, strings.Join(h.Webhook.EventTypes, ","), h.Secret)
		return nil
	case "list":
		if err := exactly("webhook list", pos, 0); err != nil {
			return err
		}
		hooks, err := api.Webhooks(ctx)
		if err != nil {
			return fmt.Errorf("webhook list: %w", err)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tURL\tOWNER\tEVENTS\tSTATE\tPENDING\tDEAD\tCREATED\tBY\tPAUSED BECAUSE")
		for _, h := range hooks {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", h.WebhookID, h.URL, h.Owner, strings.Join(h.EventTypes, ","),
				h.State, h.Pending, h.Dead, h.CreatedAt.UTC().Format(time.RFC3339), h.CreatedBy, h.PausedReason)
		}
		return tw.Flush()
	case "rm":
		id, err := ids(1)
		if err != nil {
			return err
		}
		if err := api.DeleteWebhook(ctx, id[0]); err != nil {
			return fmt.Errorf("webhook rm: %w", err)
		}
		fmt.Fprintf(e.stdout, "webhook %d removed\n", id[0])
		return nil
	case "deliveries":
		id, err := ids(1)
		if err != nil {
			return err
		}
		ds, err := api.Deliveries(ctx, id[0], client.DeliveryQuery{State: state, Limit: limit, BeforeID: before})
		if err != nil {
			return fmt.Errorf("webhook deliveries: %w", err)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "DELIVERY\tMESSAGE\tEVENT\tDOC\tSTATE\tATTEMPTS\tSTATUS\tCREATED\tNEXT OR DONE\tERROR")
		for _, d := range ds {
			when := ""
			if d.DeliveredAt != nil {
				when = d.DeliveredAt.UTC().Format(time.RFC3339)
			} else if d.NextAttemptAt != nil {
				when = "next " + d.NextAttemptAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%d\t%d\t%s\t%s\t%s\n", d.DeliveryID, d.MessageID, d.EventType, d.DocID, d.State,
				d.Attempts, d.LastStatus, d.CreatedAt.UTC().Format(time.RFC3339), when, d.LastError)
		}
		return tw.Flush()
	case "redeliver":
		id, err := ids(2)
		if err != nil {
			return err
		}
		d, err := api.Redeliver(ctx, id[0], id[1])
		if err != nil {
			return fmt.Errorf("webhook redeliver: %w", err)
		}
		fmt.Fprintf(e.stdout, "delivery %d of webhook %d is %s again\n", d.DeliveryID, d.WebhookID, d.State)
		return nil
	case "resume":
		id, err := ids(1)
		if err != nil {
			return err
		}
		h, n, err := api.ResumeWebhook(ctx, id[0], skipDead)
		if err != nil {
			return fmt.Errorf("webhook resume: %w", err)
		}
		fmt.Fprintf(e.stdout, "webhook %d is %s; %d dead deliveries sent again\n", h.WebhookID, h.State, n)
		return nil
	}
	return fmt.Errorf("webhook: unknown subcommand %q (add, list, rm, deliveries, redeliver, resume)", sub)
}
