package documentsvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/blob"
	"github.com/docrepo/docrepo/pkg/blob/diskstore"
	"github.com/docrepo/docrepo/pkg/blob/s3store"
	"github.com/docrepo/docrepo/pkg/bootstrap"
	"github.com/docrepo/docrepo/pkg/config"
	auditv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/audit/v1"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	folderv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"
	schemav1 "github.com/docrepo/docrepo/pkg/gen/docrepo/schema/v1"
	webhookv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/webhook/v1"
	"github.com/docrepo/docrepo/pkg/grpcclient"
	"github.com/docrepo/docrepo/pkg/outbox"
	"github.com/docrepo/docrepo/pkg/webhook"
)

// Config is the document service's configuration.
type Config struct {
	config.Common
	// FolderAddr and SchemaAddr are the gRPC addresses of the folder and
	// schema services.
	FolderAddr string
	SchemaAddr string
	// BlobDir is the local blob directory, used unless MinIO.Endpoint is set.
	BlobDir string
	MinIO   MinIOConfig
	// MaxUploadBytes is the largest accepted file (413 above).
	MaxUploadBytes int64
	// PageCountMaxBytes is the largest PDF whose pages are counted.
	PageCountMaxBytes int64
	// PageCountConcurrency bounds page counts at once (0: the CPUs).
	PageCountConcurrency int
	// OrphanAge is how old the pending record of an upload that never
	// committed must be before its blob is deleted (0: never sweep).
	OrphanAge time.Duration
	// ValuesTimeout and ValuesPerCaller bound distinct-values listings
	// (Deps).
	ValuesTimeout   time.Duration
	ValuesPerCaller int
	// TrashRetention is how long deleted documents stay in the trash.
	TrashRetention time.Duration
	// LockTTL is how long a lock holds (Deps.LockTTL; 0: until unlocked).
	LockTTL time.Duration

	// Webhook is how webhook deliveries are sent.
	Webhook WebhookConfig

	// Listener, when set, replaces listening on GRPCAddr (tests).
	Listener net.Listener
	// Logger, when set, replaces the configured logger (tests).
	Logger *slog.Logger
}

// MinIOConfig locates the S3 bucket (MinIO or any S3-compatible service).
type MinIOConfig struct {
	Endpoint  string
	AccessKey string
	SecretKey string
	Bucket    string
	UseSSL    bool
}

// DefaultMaxUploadBytes is the default upload limit (10 GiB), the same as
// the gateway's.
const DefaultMaxUploadBytes = config.DefaultMaxUploadBytes

// Register adds the service's settings to l.
func (c *Config) Register(l *config.Loader) {
	l.RegisterCommon(&c.Common, "document", "127.0.0.1:9111")
	l.ServiceAddr(&c.FolderAddr, "folder")
	l.ServiceAddr(&c.SchemaAddr, "schema")
	l.String(&c.BlobDir, "blob-dir", "DOCREPO_BLOB_DIR", "./.data/blobs", "directory of the local blob store (used unless MINIO_ENDPOINT is set)")
	l.String(&c.MinIO.Endpoint, "minio-endpoint", "MINIO_ENDPOINT", "", "MinIO/S3 host:port; empty: blobs on local disk")
	l.String(&c.MinIO.AccessKey, "minio-access-key", "MINIO_ACCESS_KEY", "", "MinIO/S3 access key")
	l.String(&c.MinIO.SecretKey, "minio-secret-key", "MINIO_SECRET_KEY", "", "MinIO/S3 secret key")
	l.String(&c.MinIO.Bucket, "minio-bucket", "MINIO_BUCKET", "docrepo", "MinIO/S3 bucket (created when missing)")
	l.Bool(&c.MinIO.UseSSL, "minio-use-ssl", "MINIO_USE_SSL", false, "use https for MinIO/S3")
	l.RegisterMaxUploadBytes(&c.MaxUploadBytes)
	l.Int64(&c.PageCountMaxBytes, "pagecount-max-bytes", "DOCREPO_PAGECOUNT_MAX_BYTES", DefaultPageCountMaxBytes, "largest PDF whose pages are counted at upload")
	l.Int(&c.PageCountConcurrency, "pagecount-concurrency", "DOCREPO_PAGECOUNT_CONCURRENCY", 0, "PDFs counted at once at upload (0: the number of CPUs)")
	l.Duration(&c.ValuesTimeout, "values-timeout", "DOCREPO_VALUES_TIMEOUT", DefaultValuesTimeout, "time limit of one distinct-values listing (504 past it)")
	l.Int(&c.ValuesPerCaller, "values-per-caller", "DOCREPO_VALUES_PER_CALLER", DefaultValuesPerCaller, "distinct-values listings one caller may run at once (429 beyond; all callers together get at most a quarter of the connection pool)")
	l.Duration(&c.TrashRetention, "trash-retention", "DOCREPO_TRASH_RETENTION", DefaultTrashRetention, "how long a deleted document stays in the trash (restorable) before it and its files are purged")
	l.Duration(&c.LockTTL, "lock-ttl", "DOCREPO_LOCK_TTL", 0, "how long a document lock holds before it expires (0: until its holder unlocks it or an operator breaks it with docrepoctl lock break)")
	l.Duration(&c.Webhook.Timeout, "webhook-timeout", "DOCREPO_WEBHOOK_TIMEOUT", DefaultWebhookTimeout, "time limit of one webhook delivery attempt (connecting, sending, the answer); a timeout is retried")
	l.Bool(&c.Webhook.AllowPrivate, "webhook-allow-private", "DOCREPO_WEBHOOK_ALLOW_PRIVATE", false, "let webhook deliveries reach loopback, private and link-local addresses (refused by default, checked on the address dialed)")
	l.Duration(&c.Webhook.Schedule.Initial, "webhook-backoff", "DOCREPO_WEBHOOK_BACKOFF", DefaultWebhookBackoff, "wait before the first retry of a failed webhook delivery; each next wait doubles")
	l.Duration(&c.Webhook.Schedule.Max, "webhook-backoff-max", "DOCREPO_WEBHOOK_BACKOFF_MAX", DefaultWebhookBackoffMax, "longest wait between two attempts of a webhook delivery")
	l.Duration(&c.Webhook.Schedule.Period, "webhook-retry-period", "DOCREPO_WEBHOOK_RETRY_PERIOD", DefaultWebhookRetryPeriod, "how long a failing webhook delivery is retried before it is dead (then redelivered by hand)")
	l.Int(&c.Webhook.Workers, "webhook-workers", "DOCREPO_WEBHOOK_WORKERS", DefaultWebhookWorkers, "webhook deliveries sent at once")
	l.Duration(&c.Webhook.LogRetention, "webhook-log-retention", "DOCREPO_WEBHOOK_LOG_RETENTION", DefaultWebhookLogRetention, "how long delivered webhook deliveries stay in the delivery log (pending and dead ones stay)")
	l.String(&c.Webhook.Key, "webhook-key", "DOCREPO_WEBHOOK_KEY", "", "key sealing the webhook signing secrets at rest (AES-256-GCM): the standard base64 of 32 random bytes (openssl rand -base64 32); required once webhooks are used; keep it out of the database's backups")
	l.String(&c.Webhook.OldKeys, "webhook-old-keys", "DOCREPO_WEBHOOK_OLD_KEYS", "", "previous DOCREPO_WEBHOOK_KEY values, comma-separated, during a rotation: secrets sealed under them are sealed again under the current key at start")
	l.Duration(&c.Webhook.Poll, "webhook-poll", "DOCREPO_WEBHOOK_POLL", DefaultWebhookPoll, "how often due webhook retries are looked for (new deliveries are sent at once)")
	l.Duration(&c.OrphanAge, "orphan-age", "DOCREPO_ORPHAN_BLOB_AGE", 24*time.Hour, "age after which the blob of an upload that never committed is deleted (0: never)")
}

// OpenStore opens the configured blob store: S3 when an endpoint is set,
// else the local directory.
func OpenStore(ctx context.Context, cfg Config) (blob.Store, error) {
	if cfg.MinIO.Endpoint != "" {
		st, err := s3store.New(ctx, s3store.Config{
			Endpoint:  cfg.MinIO.Endpoint,
			AccessKey: cfg.MinIO.AccessKey,
			SecretKey: cfg.MinIO.SecretKey,
			Bucket:    cfg.MinIO.Bucket,
			UseTLS:    cfg.MinIO.UseSSL,
		})
		if err != nil {
			return nil, fmt.Errorf("document: blob store: %w", err)
		}
		return st, nil
	}
	if cfg.BlobDir == "" {
		return nil, errors.New("document: no blob store: set DOCREPO_BLOB_DIR or MINIO_ENDPOINT")
	}
	st, err := diskstore.New(cfg.BlobDir)
	if err != nil {
		return nil, fmt.Errorf("document: blob store: %w", err)
	}
	return st, nil
}

// StoreID names the configured blob store: the S3 endpoint and bucket, or
// the absolute local directory.
func StoreID(cfg Config) string {
	if cfg.MinIO.Endpoint != "" {
		return "s3://" + cfg.MinIO.Endpoint + "/" + cfg.MinIO.Bucket
	}
	if abs, err := filepath.Abs(cfg.BlobDir); err == nil {
		return "file://" + abs
	}
	return "file://" + cfg.BlobDir
}

// Run runs the document service until ctx is done.
func Run(ctx context.Context, cfg Config) error {
	svc, err := bootstrap.Start(ctx, "document", cfg.Common, bootstrap.Options{Schema: Schema, Migrations: Migrations(), Logger: cfg.Logger,
		Metrics: []func(prometheus.Registerer) error{outbox.RegisterMetrics}})
	if err != nil {
		return err
	}
	defer svc.Close()
	store, err := OpenStore(ctx, cfg)
	if err != nil {
		return err
	}
	if c, ok := store.(interface{ Close() error }); ok {
		defer c.Close()
	}
	folderConn, err := grpcclient.Dial(cfg.FolderAddr)
	if err != nil {
		return err
	}
	defer folderConn.Close()
	schemaConn, err := grpcclient.Dial(cfg.SchemaAddr)
	if err != nil {
		return err
	}
	defer schemaConn.Close()
	svc.Listener = cfg.Listener
	service := NewService(Deps{
		Pool:                 svc.Pool,
		Store:                store,
		Folders:              folderv1.NewFolderServiceClient(folderConn),
		Schema:               schemav1.NewSchemaServiceClient(schemaConn),
		MaxUploadBytes:       cfg.MaxUploadBytes,
		PageCountMaxBytes:    cfg.PageCountMaxBytes,
		PageCountConcurrency: cfg.PageCountConcurrency,
		PendingTouch:         pendingTouch(cfg.OrphanAge),
		ValuesTimeout:        cfg.ValuesTimeout,
		ValuesPerCaller:      cfg.ValuesPerCaller,
		TrashRetention:       cfg.TrashRetention,
		StoreID:              StoreID(cfg),
		LockTTL:              cfg.LockTTL,
		Logger:               svc.Logger,
	})
	documentv1.RegisterDocumentServiceServer(svc.Server.GRPC(), service)
	documentv1.RegisterDocumentLifecycleServiceServer(svc.Server.GRPC(), service)
	svc.Go(func(ctx context.Context) error { return trashLoop(ctx, service, svc.Logger) })
	auditv1.RegisterAuditServiceServer(svc.Server.GRPC(), NewAuditServer(service, auditv1.NewAuditPartServiceClient(folderConn), svc.Identity))
	auditv1.RegisterAuditPartServiceServer(svc.Server.GRPC(), &audit.PartServer{Log: audit.In(Schema), Pool: svc.Pool})
	if cfg.Webhook.Keyring, err = webhook.ParseKeyring(cfg.Webhook.Key, cfg.Webhook.OldKeys); err != nil {
		return fmt.Errorf("document: %w", err)
	}
	hooks := NewWebhooks(svc.Pool, svc.Identity, cfg.Webhook, svc.Logger)
	if n, err := hooks.SealSecrets(ctx); err != nil {
		return fmt.Errorf("document: webhook secrets: %w", err)
	} else if n > 0 {
		svc.Logger.Info("sealed webhook signing secrets under the current DOCREPO_WEBHOOK_KEY", "subscriptions", n)
	}
	webhookv1.RegisterWebhookServiceServer(svc.Server.GRPC(), hooks)
	svc.Go(hooks.RunDeliveries)
	if cfg.OrphanAge > 0 {
		svc.Go(func(ctx context.Context) error { return sweepLoop(ctx, service, cfg.OrphanAge, svc.Logger) })
	}
	if cfg.LockTTL > 0 {
		svc.Go(func(ctx context.Context) error { return lockSweepLoop(ctx, service, svc.Logger) })
	}
	if cfg.NATSURL != "" {
		js, err := svc.JetStream()
		if err != nil {
			return err
		}
		svc.Go(func(ctx context.Context) error {
			return outbox.RunRelay(ctx, svc.Pool, js, svc.Logger, outbox.Options{Name: "document"}, outbox.WithReplicas(cfg.NATSReplicas))
		})
		svc.Go(func(ctx context.Context) error {
			return service.ConsumeFolderEvents(ctx, js, outbox.WithReplicas(cfg.NATSReplicas))
		})
		svc.Go(func(ctx context.Context) error {
			return hooks.ConsumeWebhookEvents(ctx, js, outbox.WithReplicas(cfg.NATSReplicas))
		})
	} else {
		svc.Logger.Warn("NATS_URL is empty: outbox events are stored but not published, and folder deletions are not heard")
	}
	svc.Ready = func(ctx context.Context) error {
		_, err := store.Stat(ctx, "readyz-probe")
		if err != nil && !blob.IsNotFound(err) {
			return fmt.Errorf("blob store: %w", err)
		}
		return nil
	}
	return svc.Run(ctx)
}

// pendingTouch is how often uploads in progress renew their pending
// record: a quarter of the sweeper's age, at most DefaultPendingTouch.
func pendingTouch(orphanAge time.Duration) time.Duration {
	if orphanAge <= 0 {
		return DefaultPendingTouch
	}
	return min(DefaultPendingTouch, orphanAge/4)
}

// sweepInterval is how often the service looks for orphaned blobs.
const sweepInterval = 10 * time.Minute

// sweepLoop deletes the blobs of uploads that died before committing, at
// start and then every sweepInterval.
func sweepLoop(ctx context.Context, s *Service, age time.Duration, log *slog.Logger) error {
	for {
		if n, err := s.SweepPending(ctx, age); err != nil && ctx.Err() == nil {
			log.Warn("sweeping orphaned blobs failed; will retry", "error", err, "removed", n)
		} else if n > 0 {
			log.Info("swept orphaned blobs", "removed", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(sweepInterval):
		}
	}
}

// trashInterval is how often the service purges expired trash and resumes
// interrupted purges: a tenth of the retention, between a second and ten
// minutes.
func trashInterval(retention time.Duration) time.Duration {
	return min(max(retention/10, time.Second), 10*time.Minute)
}

// trashLoop finishes interrupted purges and purges expired trash, at start
// and then every trashInterval.
func trashLoop(ctx context.Context, s *Service, log *slog.Logger) error {
	for {
		if n, err := s.SweepTrash(ctx); err != nil && ctx.Err() == nil {
			log.Warn("sweeping the trash failed; will retry", "error", err, "purged", n)
		} else if n > 0 {
			log.Info("purged documents from the trash", "purged", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(trashInterval(s.trashRetention)):
		}
	}
}
