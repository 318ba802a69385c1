package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// OpenAI defaults.
const (
	DefaultBatchSize     = 64
	DefaultOpenAITimeout = 60 * time.Second
	// maxResponseBytes bounds a response body (64 texts × 4096 floats as
	// JSON is about 6 MiB).
	maxResponseBytes = 256 << 20
)

// ErrServer reports a failed or malformed answer from an embeddings server.
var ErrServer = errors.New("embed: embeddings server error")

// OpenAIConfig configures an OpenAI-compatible embeddings client.
type OpenAIConfig struct {
	// BaseURL of the API, including the version prefix:
	// "http://localhost:11434/v1" (Ollama), "http://tei:8080/v1" (TEI),
	// "https://api.openai.com/v1". Required.
	BaseURL string
	// Model sent with each request. Required.
	Model string
	// APIKey, if set, is sent as "Authorization: Bearer <key>".
	APIKey string
	// Dimensions expected (0 = learn from the first response). With
	// SendDimensions it is also requested from the server.
	Dimensions     int
	SendDimensions bool
	// BatchSize: texts per request (default DefaultBatchSize).
	BatchSize int
	// Timeout per request (default DefaultOpenAITimeout).
	Timeout time.Duration
	// HTTPClient, if set, is used for requests.
	HTTPClient *http.Client
}

// OpenAI embeds through an OpenAI-compatible POST /embeddings endpoint.
type OpenAI struct {
	cfg      OpenAIConfig
	endpoint string
	client   *http.Client
	dim      atomic.Int64 // fixed by the config or the first response
}

// NewOpenAI checks cfg and returns a client. It does not contact the
// server.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if cfg.BaseURL == "" {
		return nil, fmt.Errorf("%w: openai embedder needs a base URL", ErrConfig)
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: openai base URL %q is not an http(s) URL", ErrConfig, cfg.BaseURL)
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, fmt.Errorf("%w: openai embedder needs a model name", ErrConfig)
	}
	if cfg.Dimensions < 0 || cfg.BatchSize < 0 || cfg.Timeout < 0 {
		return nil, fmt.Errorf("%w: negative dimensions, batch size or timeout", ErrConfig)
	}
	if cfg.SendDimensions && cfg.Dimensions == 0 {
		return nil, fmt.Errorf("%w: SendDimensions needs Dimensions", ErrConfig)
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultOpenAITimeout
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	e := &OpenAI{
		cfg:      cfg,
		endpoint: strings.TrimRight(cfg.BaseURL, "/") + "/embeddings",
		client:   client,
	}
	e.dim.Store(int64(cfg.Dimensions))
	return e, nil
}

// Dimensions implements Embedder: the configured dimension, or the one
// learnt from the first response (0 before any).
func (e *OpenAI) Dimensions() int { return int(e.dim.Load()) }

// Name implements Embedder.
func (e *OpenAI) Name() string { return "openai:" + e.cfg.Model }

// Identity implements Identifier. The version is unknown: the server
// does not say which weights it serves under a model name.
func (e *OpenAI) Identity() Identity {
	return Identity{Kind: KindOpenAI, Model: e.cfg.Model, Dimensions: e.Dimensions()}
}

type embeddingRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     int      `json:"dimensions,omitempty"`
}

type embeddingResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Embed implements Embedder, sending texts in batches of BatchSize.
func (e *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.cfg.BatchSize {
		batch := texts[start:min(start+e.cfg.BatchSize, len(texts))]
		vecs, err := e.embedBatch(ctx, batch)
		if err != nil {
			return nil, fmt.Errorf("embed texts %d..%d: %w", start, start+len(batch)-1, err)
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (e *OpenAI) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	req := embeddingRequest{Model: e.cfg.Model, Input: texts, EncodingFormat: "float"}
	if e.cfg.SendDimensions {
		req.Dimensions = e.cfg.Dimensions
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, e.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if e.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+e.cfg.APIKey)
	}
	resp, err := e.client.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("%w: POST %s: %w", ErrServer, e.endpoint, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading response of %s: %w", ErrServer, e.endpoint, err)
	}
	if len(raw) > maxResponseBytes {
		return nil, fmt.Errorf("%w: response of %s larger than %d bytes", ErrServer, e.endpoint, maxResponseBytes)
	}
	var parsed embeddingResponse
	jsonErr := json.Unmarshal(raw, &parsed)
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(raw[:min(len(raw), 512)]))
		if jsonErr == nil && parsed.Error != nil && parsed.Error.Message != "" {
			msg = parsed.Error.Message
		}
		return nil, fmt.Errorf("%w: %s answered %s: %s", ErrServer, e.endpoint, resp.Status, msg)
	}
	if jsonErr != nil {
		return nil, fmt.Errorf("%w: %s: malformed JSON: %v", ErrServer, e.endpoint, jsonErr)
	}
	if len(parsed.Data) != len(texts) {
		return nil, fmt.Errorf("%w: %s returned %d embeddings for %d inputs", ErrServer, e.endpoint, len(parsed.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for _, d := range parsed.Data {
		// Results carry their input's index; servers may reorder them.
		idx := d.Index
		if idx < 0 || idx >= len(texts) || out[idx] != nil {
			return nil, fmt.Errorf("%w: %s returned a bad or repeated index %d", ErrServer, e.endpoint, d.Index)
		}
		if len(d.Embedding) == 0 {
			return nil, fmt.Errorf("%w: %s returned an empty embedding for input %d", ErrServer, e.endpoint, idx)
		}
		want := e.dim.Load()
		if want == 0 && e.dim.CompareAndSwap(0, int64(len(d.Embedding))) {
			want = int64(len(d.Embedding))
		} else if want == 0 {
			want = e.dim.Load()
		}
		if int64(len(d.Embedding)) != want {
			return nil, fmt.Errorf("%w: %s returned %d dimensions for input %d, want %d (model %q)", ErrServer, e.endpoint, len(d.Embedding), idx, want, e.cfg.Model)
		}
		out[idx] = d.Embedding
	}
	return out, nil
}
