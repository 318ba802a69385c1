package documentsvc

import (
	"sync"
	"sync/atomic"
	"time"
)

// answers remembers positive answers of other services for a while: "this
// doc type exists" (checkDocType), "this folder is visible to these
// groups" (checkFolder). Only answers that cannot be withdrawn through
// docrepo are kept, so the TTL only bounds how long a change an operator
// made by hand in SQL goes unnoticed. Negative answers are never kept: what
// was created a moment ago is accepted at once. At most max keys are held;
// past that the memory is cleared.
type answers struct {
	ttl time.Duration
	max int64
	m   sync.Map // key → expiry (time.Time)
	n   atomic.Int64
}

// has reports whether key was answered yes less than ttl before now.
func (a *answers) has(key string, now time.Time) bool {
	until, ok := a.m.Load(key)
	return ok && now.Before(until.(time.Time))
}

// add remembers a yes for key from now on.
func (a *answers) add(key string, now time.Time) {
	if a.n.Add(1) > a.max {
		a.m.Clear()
		a.n.Store(1)
	}
	a.m.Store(key, now.Add(a.ttl))
}
