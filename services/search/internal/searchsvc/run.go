package searchsvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/docrepo/docrepo/pkg/bootstrap"
	"github.com/docrepo/docrepo/pkg/config"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/embed"
	folderv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"
	indexerv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/indexer/v1"
	searchv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/search/v1"
	"github.com/docrepo/docrepo/pkg/grpcclient"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/indexing"
	"github.com/docrepo/docrepo/pkg/memlimit"
	"github.com/docrepo/docrepo/pkg/ocr"
	"github.com/docrepo/docrepo/pkg/ocrjobs"
	"github.com/docrepo/docrepo/pkg/search/bleveengine"
	"github.com/docrepo/docrepo/pkg/search/engine"
	"github.com/docrepo/docrepo/pkg/search/opensearchengine"
)

// Config is the search service's configuration.
type Config struct {
	config.Common
	// Indexing configures the embedder (always) and, in embedded mode, the
	// indexing pipeline this process runs.
	Indexing indexing.Settings
	// IndexDir is where the embedded engine keeps its index.
	IndexDir string
	// PersistNap is the embedded engine's bleveengine.Options.PersistNap.
	PersistNap time.Duration
	// SearchTimeout bounds each search (504 Gateway Timeout past it).
	SearchTimeout time.Duration
	// FolderAddr is the folder service's gRPC address: filesbelongto
	// concerns only the folders the caller can see.
	FolderAddr string
	// OpenSearch: when its URL is set, the service searches OpenSearch and
	// a separate indexer process writes it.
	OpenSearch opensearchengine.Settings
	// MemoryLimit is the process's soft memory limit (pkg/memlimit: a
	// size such as 3GiB, or off).
	MemoryLimit string

	// Listener, when set, replaces listening on GRPCAddr (tests).
	Listener net.Listener
	// Logger, when set, replaces the configured logger (tests).
	Logger *slog.Logger
}

// Register adds the service's settings to l.
func (c *Config) Register(l *config.Loader) {
	l.RegisterCommon(&c.Common, "search", "127.0.0.1:9113")
	c.Indexing.Register(l)
	l.String(&c.IndexDir, "index-dir", "DOCREPO_INDEX_DIR", "./.data/index", "directory of the embedded search index")
	l.Duration(&c.PersistNap, "index-persist-nap", "DOCREPO_INDEX_PERSIST_NAP", DefaultPersistNap,
		"embedded engine: how long indexed batches are gathered in memory before they are written to disk as one segment")
	l.Duration(&c.SearchTimeout, "search-timeout", "DOCREPO_SEARCH_TIMEOUT", DefaultTimeout, "server-side search timeout (504 Gateway Timeout past it)")
	l.ServiceAddr(&c.FolderAddr, "folder")
	c.OpenSearch.Register(l)
	l.String(&c.MemoryLimit, "memory-limit", "DOCREPO_MEMORY_LIMIT", DefaultMemoryLimit,
		"soft limit of the process's Go memory (B, KiB, MiB, GiB; off for none): the runtime collects sooner near it instead of letting the heap grow to twice what is live, "+
			"and never keeps it below 1.25x the live heap; in a container never above 90% of the container's memory limit; GOMEMLIMIT wins when set")
}

// metricGateOverruns exports bleveengine.GateOverruns (the embedded
// engine's searches that outlived their lease at its search gate).
var metricGateOverruns = prometheus.NewCounterFunc(prometheus.CounterOpts{
	Name: "docrepo_search_gate_overruns_total",
	Help: "Searches of the embedded engine still running when their lease at its first come, first served search gate ended (bleveengine.gateLease): each gave its place to the next search in the queue and went on beside it.",
}, func() float64 { return float64(bleveengine.GateOverruns()) })

// DefaultMemoryLimit is the default of Config.MemoryLimit. The embedded
// engine holds ~2.3-2.6 KB per document live (the vector codes and the
// document table), so at a million documents ~2.4 GiB live fits under it
// with ~45 % to grow between collections, where GOGC alone let the
// process hold up to twice what is live (4.0-4.5 GiB anonymous at 830 k
// documents, issue 23's limit is 4 GiB); an index of fewer than ~700 k
// documents never reaches it, and past ~1.4 M the limit follows the live
// heap (memlimit.Headroom).
const DefaultMemoryLimit = "3584MiB"

// DefaultPersistNap is the default of Config.PersistNap.
const DefaultPersistNap = 0

// Embedded reports whether the service runs the embedded engine (and so
// the indexing pipeline).
func (c *Config) Embedded() bool { return !c.OpenSearch.Enabled() }

// Schema is the search service's own Postgres schema: the OCR job queue
// and text cache of the embedded engine (pkg/ocrjobs).
const Schema = "search"

// Run runs the search service until ctx is done.
func Run(ctx context.Context, cfg Config) error {
	limit, err := memlimit.Parse(cfg.MemoryLimit)
	if err != nil {
		return fmt.Errorf("search: DOCREPO_MEMORY_LIMIT: %w", err)
	}
	// Before the index is opened: opening it allocates as much as it
	// keeps.
	// In a container, under its memory limit (memlimit.ContainerShare).
	limit = memlimit.WithinContainer(limit, memlimit.ContainerLimit(os.ReadFile))
	limit, limitFrom, stopLimit := memlimit.Apply(limit, os.Getenv)
	defer stopLimit()
	svc, err := bootstrap.Start(ctx, "search", cfg.Common, bootstrap.Options{Schema: Schema,
		Migrations: []database.MigrationSet{identity.Migrations, ocrjobs.Migrations(Schema)}, Logger: cfg.Logger,
		Metrics: []func(prometheus.Registerer) error{RegisterMetrics, indexing.RegisterMetrics, ocr.RegisterMetrics}})
	if err != nil {
		return err
	}
	defer svc.Close()
	svc.Listener = cfg.Listener
	log := svc.Logger
	log.Info("memory limit", "bytes", limit, "from", limitFrom)
	emb, err := cfg.Indexing.NewEmbedder(ctx)
	if err != nil {
		return err
	}
	embID := embed.IdentityOf(emb)
	opened, generation, unfinished, err := openEngine(ctx, cfg, embID, log)
	if err != nil {
		return err
	}
	// The index must hold vectors of this embedder (docs/design.md §6).
	check, err := indexing.CheckEmbedder(ctx, opened, embID, cfg.Indexing.EmbedderChange, log)
	if err != nil {
		opened.Close()
		return fmt.Errorf("search: %w", err)
	}
	// A generation a rebuild left unfinished is continued only by the
	// re-embedding (below, when it was written for this embedder).
	if unfinished != "" && check != indexing.EmbedderRebuild {
		if err := bleveengine.RemoveGeneration(cfg.IndexDir, unfinished); err != nil {
			log.Warn("removing the index generation a rebuild left unfinished", "generation", unfinished, "error", err)
		}
		unfinished = ""
	}
	// Searches and the indexer use the index through a switch, so that a
	// full rebuild can swap in a new index without downtime.
	eng := engine.NewSwitchable(opened)
	defer eng.Close()
	folderConn, err := grpcclient.Dial(cfg.FolderAddr)
	if err != nil {
		return err
	}
	defer folderConn.Close()
	search := NewService(eng, emb, folderv1.NewFolderServiceClient(folderConn), cfg.SearchTimeout, log)
	// While the index is re-embedded, vector queries are embedded with
	// the embedder it was built with, when that can be built here.
	var from embed.Identity
	vectorsDuring := "unavailable"
	if check == indexing.EmbedderRebuild {
		if from, _, err = opened.Embedder(ctx); err != nil {
			return fmt.Errorf("search: read the index's embedder: %w", err)
		}
		if prev, ok := cfg.Indexing.EmbedderFor(ctx, from); ok {
			search.SetPreviousEmbedder(prev)
			vectorsDuring = "previous embedder"
			log.Info("vector search answers from the index being re-embedded, with queries embedded by its embedder, until the new index is in use",
				"index_embedder", from.String(), "embedder", embID.String())
		} else {
			log.Warn("the index's embedder cannot be built here: vector search answers 503 until the re-embedded index is in use",
				"index_embedder", from.String(), "embedder", embID.String())
		}
	}
	searchv1.RegisterSearchServiceServer(svc.Server.GRPC(), search)
	svc.Ready = func(ctx context.Context) error {
		_, err := eng.Count(ctx)
		return err
	}
	// /readyz names the embedder, and says when it is the lexical
	// fallback (hash) rather than a semantic model.
	svc.ReadyInfo = indexing.EmbedderStatus(emb, svc.Logger)
	if cfg.Embedded() {
		pipe, err := cfg.Indexing.NewPipeline(eng, emb, svc.Pool, log.With("component", "indexer"))
		if err != nil {
			return fmt.Errorf("search: embedded mode runs the indexer: %w", err)
		}
		defer pipe.Close()
		// The index has one writer, so its durable consumer has one
		// process: events a killed predecessor held are reclaimed at start.
		pipe.Exclusive = true
		pipe.Server.RebuildInto(embeddedRebuild(cfg.IndexDir, bleveengine.Options{PersistNap: cfg.PersistNap}, eng, &generation, unfinished, embID, log))
		indexerv1.RegisterIndexerServiceServer(svc.Server.GRPC(), pipe.Server)
		if check == indexing.EmbedderRebuild {
			svc.Go(func(ctx context.Context) error { pipe.Server.Reembed(ctx); return nil })
			svc.ReadyState = reembeddingState(pipe.Server, from, vectorsDuring)
		}
		svc.Go(func(ctx context.Context) error { pipe.RunVectorStage(ctx); return nil })
		svc.Go(func(ctx context.Context) error { pipe.RunOCRStage(ctx); return nil })
		if cfg.NATSURL != "" {
			svc.Go(func(ctx context.Context) error { return pipe.Consume(ctx, cfg.Common) })
		} else {
			log.Warn("NATS_URL is empty: not consuming document events; the index changes only by reindex")
		}
		log.Info("embedded search engine", "dir", cfg.IndexDir, "embedder", embID.String())
	} else {
		log.Info("OpenSearch search engine; the indexer process writes it", "embedder", embID.String())
		if check == indexing.EmbedderRebuild {
			log.Warn("the indexer process re-embeds the index; until it records the new embedder, vector queries are embedded as described above",
				"vector_search_meanwhile", vectorsDuring)
		}
	}
	return svc.Run(ctx)
}

// reembeddingState is /readyz's "reembedding" while the index is
// re-embedded: running, documents done of total, the embedder the index in
// use holds vectors of (from), and how vector searches are answered
// meanwhile ("previous embedder": queries embedded with from; or
// "unavailable": 503). Once the re-embedded index is in use it is gone.
func reembeddingState(srv *indexing.Server, from embed.Identity, vectors string) func() map[string]any {
	return func() map[string]any {
		running, done, total, kept := srv.Reembedding()
		if !running {
			return nil
		}
		return map[string]any{"reembedding": map[string]any{
			"running": true, "done": done, "total": total, "kept": kept, "index_embedder": from.String(), "vector_search": vectors}}
	}
}

// openEngine opens the configured engine; for the embedded one it also
// returns the name of the index generation in use and of the newest one a
// rebuild left unfinished ("" if none).
func openEngine(ctx context.Context, cfg Config, emb embed.Identity, log *slog.Logger) (engine.Engine, string, string, error) {
	if cfg.Embedded() {
		if cfg.IndexDir == "" {
			return nil, "", "", errors.New("search: DOCREPO_INDEX_DIR is empty")
		}
		e, gen, unfinished, err := bleveengine.OpenCurrentResumable(cfg.IndexDir, bleveengine.Options{PersistNap: cfg.PersistNap})
		if err != nil {
			return nil, "", "", fmt.Errorf("search: open the embedded index at %s: %w", cfg.IndexDir, err)
		}
		return e, gen, unfinished, nil
	}
	e, err := cfg.OpenSearch.Open(ctx, emb, cfg.SearchTimeout, log)
	return e, "", "", err
}

// embeddedRebuild is how a full rebuild of the embedded index runs: into
// the next generation directory, which then becomes current (CURRENT is
// replaced atomically) and takes the old one's place in the switch; the
// old generation is closed and deleted.
//
// unfinished, when not "", is the generation a re-embedding killed
// mid-way left (the process starts the re-embedding at once, so the first
// rebuild is it): the first rebuild continues it when it records this
// process's embedder (id) — what it holds at its current revision, with
// its vectors, is not embedded again (indexing.Progress.Kept), documents
// it holds waiting for vectors are embedded before the switch, and the
// rebuild's anti-entropy pass removes what was deleted meanwhile — and
// otherwise (another embedder's, or none recorded) removes it and starts
// a new one.
func embeddedRebuild(root string, opts bleveengine.Options, sw *engine.Switchable, current *string, unfinished string, id embed.Identity, log *slog.Logger) func(context.Context) (indexing.Target, error) {
	var mu sync.Mutex
	return func(ctx context.Context) (indexing.Target, error) {
		mu.Lock()
		resume := unfinished
		unfinished = ""
		mu.Unlock()
		if resume != "" {
			if t := resumeGeneration(ctx, root, resume, opts, id, log); t != nil {
				t.sw, t.current = sw, current
				return t, nil
			}
		}
		e, name, err := bleveengine.NewGeneration(root, opts)
		if err != nil {
			return nil, err
		}
		if cur, ok := sw.Current().(*bleveengine.Engine); ok {
			// The rebuilt documents get the window pairs of the
			// current common terms (NEAR of common words).
			if err := e.InheritCommon(cur); err != nil {
				_ = e.Close()
				return nil, err
			}
		}
		return &generationTarget{root: root, name: name, e: e, sw: sw, current: current, log: log}, nil
	}
}

// resumeGeneration opens the unfinished generation name to continue it,
// when it records the embedder id; otherwise (or when it cannot be
// opened) it removes it and returns nil.
func resumeGeneration(ctx context.Context, root, name string, opts bleveengine.Options, id embed.Identity, log *slog.Logger) *generationTarget {
	e, err := bleveengine.ResumeGeneration(root, name, opts)
	if err != nil {
		log.Warn("the unfinished index generation cannot be opened: it is removed and the re-embedding starts over", "generation", name, "error", err)
		_ = bleveengine.RemoveGeneration(root, name)
		return nil
	}
	got, ok, err := e.Embedder(ctx)
	if err != nil || !ok || !got.Compatible(id) {
		_ = e.Close()
		_ = bleveengine.RemoveGeneration(root, name)
		log.Info("removed the index generation a rebuild left unfinished: it holds no vectors of this embedder", "generation", name,
			"its_embedder", got.String(), "recorded", ok, "embedder", id.String(), "error", err)
		return nil
	}
	n, _ := e.Count(ctx)
	_, pending, _ := e.PendingVectors(ctx, 0)
	log.Info("resuming the re-embedding in the index generation a killed process left: documents it holds at their current revision are not embedded again",
		"generation", name, "documents", n, "waiting_for_vectors", pending, "embedder", id.String())
	return &generationTarget{root: root, name: name, e: e, log: log}
}

// generationTarget is a new generation of the embedded index being built.
type generationTarget struct {
	root, name string
	e          *bleveengine.Engine
	sw         *engine.Switchable
	current    *string
	log        *slog.Logger
}

func (t *generationTarget) Engine() engine.Engine { return t.e }

func (t *generationTarget) Commit(context.Context) error {
	if err := bleveengine.CommitGeneration(t.root, t.name); err != nil {
		return err
	}
	old := t.sw.Switch(t.e)
	oldName := *t.current
	*t.current = t.name
	if err := old.Close(); err != nil {
		t.log.Warn("closing the replaced index generation", "generation", oldName, "error", err)
	}
	if err := bleveengine.RemoveGeneration(t.root, oldName); err != nil {
		t.log.Warn("removing the replaced index generation", "generation", oldName, "error", err)
	}
	t.log.Info("the rebuilt index generation is in use", "generation", t.name, "replaced", oldName)
	return nil
}

func (t *generationTarget) Abandon() {
	_ = t.e.Close()
	_ = bleveengine.RemoveGeneration(t.root, t.name)
}
