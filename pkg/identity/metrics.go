package identity

import (
	"github.com/prometheus/client_golang/prometheus"
)

// RegisterMetrics exports c's hit and miss counts as
// docrepo_token_cache_{hits,misses}_total on reg.
func (c *TokenCache) RegisterMetrics(reg prometheus.Registerer) error {
	for _, m := range []struct {
		name, help string
		get        func() int64
	}{
		{"docrepo_token_cache_hits_total", "Token authentications answered from the process's cache.", c.hits.Load},
		{"docrepo_token_cache_misses_total", "Token authentications that asked Postgres.", c.misses.Load},
	} {
		get := m.get
		if err := reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: m.name, Help: m.help},
			func() float64 { return float64(get()) })); err != nil {
			return err
		}
	}
	return nil
}
