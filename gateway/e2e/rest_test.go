package e2e

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	rest "github.com/docrepo/docrepo/pkg/client"
)

// rest returns the house REST client (pkg/client) calling as c, without
// retries (a test sees every answer), whose every response is checked
// against /openapi.json like those of c.do.
func (c *client) rest() *rest.Client {
	return restClient(c.t, stk.baseURL, c.token)
}

// restClient is c.rest against the gateway at base (a test's own stack).
func restClient(t testing.TB, base, token string) *rest.Client {
	rc, err := rest.New(base, token, rest.Options{Retry: rest.NoRetry, HTTPClient: &http.Client{Transport: validating{t: t}}})
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// validating checks every response against the OpenAPI document (a
// download's body is read into memory for it: test files are small).
type validating struct{ t testing.TB }

func (v validating) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	validateResponse(v.t, req, resp.StatusCode, resp.Header, data) // openapi_test.go
	resp.Body = io.NopCloser(bytes.NewReader(data))
	return resp, nil
}
