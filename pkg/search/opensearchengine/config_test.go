package opensearchengine

import (
	"slices"
	"testing"
	"time"
)

func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{
		EnvURL:      " https://a:9200, https://b:9200 ,",
		EnvUsername: "admin",
		EnvPassword: "secret",
		EnvIndex:    "docs-v2",
		EnvInsecure: "true",
	}
	cfg, err := ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Addresses, []string{"https://a:9200", "https://b:9200"}) || cfg.Username != "admin" ||
		cfg.Password != "secret" || cfg.Index != "docs-v2" || !cfg.InsecureSkipVerify {
		t.Errorf("cfg = %+v", cfg)
	}
	env[EnvInsecure] = "maybe"
	if _, err := ConfigFromEnv(func(k string) string { return env[k] }); err == nil {
		t.Error("OPENSEARCH_INSECURE=maybe accepted")
	}
	if _, err := ConfigFromEnv(func(string) string { return "" }); err == nil {
		t.Error("missing OPENSEARCH_URL accepted")
	}
}

func TestConfigDefaultsFillGapsAndRejectBadIndexNames(t *testing.T) {
	cfg, err := Config{Addresses: []string{"http://x"}, Dimensions: 768}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Index != DefaultIndex || cfg.MetadataDimensions != 768 || cfg.Shards != 1 || cfg.Refresh != RefreshFalse ||
		cfg.MaxRetries != 3 || cfg.RetryBackoff != 100*time.Millisecond {
		t.Errorf("defaults = %+v", cfg)
	}
	cfg, _ = Config{Addresses: []string{"http://x"}, Dimensions: 4, MaxRetries: -1}.withDefaults()
	if cfg.MaxRetries != 0 {
		t.Errorf("MaxRetries -1 gave %d, want 0 (no retries)", cfg.MaxRetries)
	}
	for _, name := range []string{"Docs", "_docs", "a b", "a/b", "a*", ".."} {
		if _, err := (Config{Addresses: []string{"http://x"}, Dimensions: 4, Index: name}).withDefaults(); err == nil {
			t.Errorf("index name %q accepted", name)
		}
	}
}

func TestBackoffDoublesUpToItsCapWithJitter(t *testing.T) {
	for attempt, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 20: 5 * time.Second} {
		got := backoffDelay(100*time.Millisecond, attempt)
		if got < want*8/10 || got > want*12/10 {
			t.Errorf("attempt %d: %v, want %v ±20%%", attempt, got, want)
		}
	}
}
