package bleveengine

import (
	"context"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// processCPU is this process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIngestSmallBatches writes 20,000 documents the way the indexer
// does under an upload load (small batches, two in flight, the persister
// nap of `make run`) and reports the CPU per document including scorch's
// background merges, which run on after the last Upsert returns: the
// benchmark waits until the process is idle. Use it to tune the merge and
// persister settings (scorchConfig).
func BenchmarkIngestSmallBatches(b *testing.B) {
	const batch = 20
	c := genCorpus(b, 20000, true)
	for range b.N {
		e, err := Open(filepath.Join(b.TempDir(), "idx"), Options{PersistNap: 20 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		cpu0, t0 := processCPU(), time.Now()
		next := make(chan []engine.Document)
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for docs := range next {
					if _, err := e.Upsert(context.Background(), docs); err != nil {
						b.Error(err)
					}
				}
			}()
		}
		for i := 0; i < len(c.docs); i += batch {
			next <- c.docs[i:min(len(c.docs), i+batch)]
		}
		close(next)
		wg.Wait()
		upserts := time.Since(t0)
		// Merges go on after the last write; wait until they are done.
		for last := processCPU(); ; {
			time.Sleep(500 * time.Millisecond)
			now := processCPU()
			if now-last < 50*time.Millisecond {
				break
			}
			last = now
		}
		cpu := processCPU() - cpu0
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(len(c.docs)), "cpu-ms/doc")
		b.ReportMetric(float64(len(c.docs))/upserts.Seconds(), "docs/s")
		b.Logf("%d documents in batches of %d: upserts took %v, CPU %v with merges", len(c.docs), batch, upserts.Round(time.Millisecond), cpu.Round(time.Millisecond))
		e.Close()
	}
}
