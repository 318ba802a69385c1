package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/docrepo/docrepo/pkg/client"
)

// printTotal prints the number of documents search sees for the key's user
// (token): the total of a search without a query, one line, nothing else,
// for the shell benchmarks (scale.sh, memory.sh) to poll. It is sent once
// (no retry): they poll again, also while the search process restarts.
func printTotal(ctx context.Context, url, token string, out io.Writer) error {
	if token == "" {
		return errors.New("total: DOCREPO_TOKEN is required (a key with the search scope)")
	}
	api, err := client.New(url, token, client.Options{
		HTTPClient: &http.Client{Timeout: 30 * time.Second},
		Retry:      client.NoRetry,
	})
	if err != nil {
		return err
	}
	r, err := api.Search(ctx, client.SearchRequest{Limit: 1, Select: []string{"id"}})
	if err != nil {
		return fmt.Errorf("total: %w", err)
	}
	_, err = fmt.Fprintln(out, r.Total)
	return err
}
