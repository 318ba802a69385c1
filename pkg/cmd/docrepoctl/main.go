// Command docrepoctl administers docrepo: groups, users, API keys and
// service credentials, document types, custom-field templates, database
// migrations and bootstrap, health checks, the search index (reindex,
// dead letters, OCR status), bulk import and the local embedder's model.
// It connects to Postgres with DATABASE_URL (or -database-url).
//
// The commands and their flags are the usage text below (docrepoctl -h);
// docs/operations.md lists the same, kept equal by
// TestOperationsPageListsEveryCommand.
//
// Custom-field templates: a grid template has typed columns of its own
// (--column, repeated, in order). TYPE is text, number, date, boolean or
// select; LABEL defaults to the name made readable ("invoice_no" → "Invoice
// no"); a select column needs its options after a third colon, separated by
// "|" (leave LABEL empty for the default: status:select::open|closed). Column
// names are lower-case identifiers; labels cannot contain ":" and options
// cannot contain "|" in this syntax.
//
// A gridlink template has columns that each link to a column of a grid
// template (--link, repeated): TEMPLATE is the grid template's name and
// COLUMN its column's name; the link takes that column's type and options,
// and by default its name and label. In TEMPLATE.COLUMN the column is the
// first ".identifier" followed by the end or by ":LABEL", so template names
// may contain dots.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/catalog"
	"github.com/docrepo/docrepo/pkg/config"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/dbroles"
	"github.com/docrepo/docrepo/pkg/grpcclient"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/logging"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "docrepoctl:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  docrepoctl [SETTING-FLAGS] COMMAND      (settings: docrepoctl -h, docs/configuration.md)

commands:
  migrate                                   apply database migrations
  group create NAME                         create a group
  user create USERNAME [--groups G1,G2]     create a user (missing groups are created)
  key create USERNAME --scopes S1,S2 [--expires-in DURATION]
                                            create an API key; prints the token (shown once)
  key revoke KEY_ID                         revoke a key
  key list [USERNAME]                       list keys
  credential create NAME --scopes S1,S2 [--expires-in DURATION]
                                            create a service credential (scopes internal,
                                            admin) for docrepo's processes or an operator's
                                            tool; prints the token (shown once). Rotate:
                                            create another of the same NAME, deploy it,
                                            revoke the old one
  credential revoke ID                      revoke a service credential
  credential list [NAME]                    list service credentials
  doctype create NAME                       create a document type
  doctype list                              list document types
  template create NAME --kind grid --column NAME:TYPE[:LABEL[:OPT1|OPT2|...]] [--column ...]
                                            create a grid custom-field template; TYPE is
                                            text, number, date, boolean or select (select
                                            needs options: status:select::open|closed)
  template create NAME --kind gridlink --link [NAME=]TEMPLATE.COLUMN[:LABEL] [--link ...]
                                            create a gridlink template whose columns take
                                            their values from columns of grid templates
  template list                             list templates and their columns
  template show NAME                        show a template's columns and field names
  bootstrap [-check] [-service-user NAME] [-admin-user NAME] [-admin-groups G1,G2]
                                            migrate; ensure the admin and service users and keys
                                            (prints new tokens as NAME=TOKEN; see docs/deployment.md)
  health [-timeout D] [-service NAME] HOST:PORT|URL
                                            gRPC health check, or HTTP GET expecting 2xx
                                            (a URL without a path: its /readyz)
  reindex [-recreate | -verify] [-addr HOST:PORT] [-token TOKEN]
                                            rebuild the search index from the documents of record,
                                            with progress; -recreate into a new index switched in
                                            when complete, -verify repairs only what differs
                                            (see reindex.go)
  ocr status [-addr HOST:PORT] [-token TOKEN]
                                            OCR work of the indexer: documents and pages
                                            queued and in progress (see ocr.go)
  deadletter list                           events the indexer parked, with why (NATS_URL)
  deadletter retry SEQ... | all             publish parked events again
  lock list [-addr HOST:PORT] [-token TOKEN]
                                            the locked documents: holder, age, expiry
  lock break DOC_ID -reason TEXT [-addr HOST:PORT] [-token TOKEN]
                                            release a lock whoever holds it (a user who left,
                                            whose keys were revoked); recorded in the audit log
  import [-url URL] [-token TOKEN] [-folder-id N] [-concurrency N] [-state FILE] DIR
                                            import a directory tree as folders and documents
                                            through the REST API; NAME.meta.json side-files give
                                            upload fields; resumable (see import.go)
  bulk [-url URL] [-token TOKEN] [-folder-id N] [-status S] ACTION ID... | ACTION -
                                            one action (delete, restore, purge, move, set_status,
                                            add_folder, remove_folder) over documents, ids from
                                            the arguments or stdin ("-"), 1,000 per request;
                                            prints the failures and a summary (see bulk.go)
  trash list [-url URL] [-token TOKEN] [-limit N]
                                            the trashed documents the key's user can see
  trash restore [-url URL] [-token TOKEN] ID... | -
                                            take documents out of the trash
  trash purge [-url URL] [-token TOKEN] ID... | -
                                            purge trashed documents now (files and rows)
  audit [-user U] [-action A,B] [-object TYPE:ID] [-since T] [-until T] [-limit N] [-follow [-interval D]]
                                            print the audit trail through the REST API (-url,
                                            -token: a key with the audit scope), oldest first;
                                            -follow keeps printing new entries
  webhook add -owner USER [-events T1,T2] [-secret whsec_...] URL
                                            subscribe URL to document events (REST API, a key
                                            with the webhooks scope); prints the secret once
  webhook list                              the subscriptions
  webhook rm ID                             remove a subscription and its delivery log
  webhook deliveries [-state S] [-limit N] [-before ID] ID
                                            a subscription's delivery log, newest first
  webhook redeliver ID DELIVERY_ID          send a dead (or delivered) delivery again
  webhook resume [-skip-dead] ID            resume a paused webhook (a delivery died): its dead deliveries first
  model pull [-dir DIR] [-base-url URL] [-lock FILE] [-resolve] [-token TOKEN] OWNER/NAME@REVISION
                                            fetch a BERT-family sentence-transformer for the
                                            local embedder from a Hugging Face-compatible hub
                                            into DOCREPO_EMBED_MODEL_DIR, every file checked
                                            against a SHA-256 (see model.go)

API-key scopes: documents_read, documents_write, search, audit, webhooks
service-credential scopes: internal, admin
`

// env is what a command needs.
type env struct {
	ctx    context.Context
	pool   *pgxpool.Pool
	stdout io.Writer
}

// settings are docrepoctl's settings (docs/configuration.md): flags before
// the command, or environment variables.
type settings struct {
	// Common holds the database URL, the NATS connection and gRPC TLS.
	config.Common
	serviceToken string
	adminToken   string
	apiURL       string
	apiToken     string
	indexerAddr  string
	searchAddr   string
	documentAddr string
	// roleURLs are the services' database URLs an earlier bootstrap
	// printed (DOCREPO_<SERVICE>_DATABASE_URL), rolePrefix their roles'
	// prefix (pkg/dbroles).
	roleURLs   map[string]*string
	rolePrefix string
	modelDir   string
	hubURL     string
	hubToken   string
}

func (s *settings) register(l *config.Loader) {
	l.RegisterDatabaseURL(&s.DatabaseURL)
	l.RegisterNATS(&s.Common)
	l.RegisterGRPCTLS(&s.GRPCTLS)
	l.RegisterServiceToken(&s.serviceToken)
	l.String(&s.adminToken, "admin-token", envAdminToken, "", "for docrepoctl bootstrap: the admin key an earlier run printed, kept while valid")
	l.String(&s.apiURL, "url", "DOCREPO_URL", "", "for docrepoctl import, bulk, trash, audit and webhook: the gateway's base URL")
	l.String(&s.apiToken, "token", "DOCREPO_TOKEN", "", "for docrepoctl import, bulk, trash, audit and webhook: the API key they run as (documents_read, documents_write; audit and webhook: the audit and webhooks scopes)")
	l.ServiceAddr(&s.indexerAddr, "indexer")
	l.ServiceAddr(&s.searchAddr, "search")
	l.ServiceAddr(&s.documentAddr, "document")
	s.roleURLs = map[string]*string{}
	for _, name := range dbroles.Names() {
		v := new(string)
		s.roleURLs[name] = v
		l.String(v, name+"-database-url", roleURLEnv(name), "", "for docrepoctl bootstrap: the "+name+" service's DATABASE_URL (its own Postgres role) an earlier run printed, kept while it logs in")
	}
	l.RegisterDBRolePrefix(&s.rolePrefix)
	l.RegisterEmbedModelDir(&s.modelDir)
	l.String(&s.hubURL, "model-hub-url", "DOCREPO_MODEL_HUB_URL", "https://huggingface.co", "for docrepoctl model pull: base URL of the Hugging Face-compatible hub")
	l.String(&s.hubToken, "model-hub-token", "HF_TOKEN", "", "for docrepoctl model pull: bearer token for gated models")
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	// The audit log names docrepoctl as the actor of what it changes, and
	// one request id groups the changes of one invocation.
	ctx = logging.WithRequestID(audit.WithService(ctx, "docrepoctl"), logging.NewRequestID())
	var s settings
	l := config.New("docrepoctl", getenv)
	s.register(l)
	if err := l.Parse(args); err != nil {
		fmt.Fprint(stderr, usage)
		return err
	}
	rest := l.Args()
	if len(rest) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	if deployCmd, ok := deployCommands[rest[0]]; ok { // deploy.go
		// reindex, ocr status and deadletter dial the services like the
		// services dial each other (DOCREPO_GRPC_TLS_*).
		creds, err := s.GRPCTLS.Client()
		if err != nil {
			return err
		}
		grpcclient.UseTransportCredentials(creds)
		return deployCmd(ctx, deployEnv{settings: s, dbURL: s.DatabaseURL, args: rest[1:], stdin: os.Stdin, stdout: stdout, stderr: stderr})
	}
	pool, err := database.Open(ctx, s.DatabaseURL, catalog.Schema)
	if err != nil {
		return err
	}
	defer pool.Close()
	e := env{ctx: ctx, pool: pool, stdout: stdout}
	cmd := strings.Join(rest[:min(2, len(rest))], " ")
	switch {
	case rest[0] == "migrate":
		return e.migrate()
	case cmd == "group create":
		return e.groupCreate(rest[2:])
	case cmd == "user create":
		return e.userCreate(rest[2:])
	case cmd == "key create":
		return e.keyCreate(rest[2:])
	case cmd == "key revoke":
		return e.keyRevoke(rest[2:])
	case cmd == "key list":
		return e.keyList(rest[2:])
	case cmd == "credential create":
		return e.credentialCreate(rest[2:])
	case cmd == "credential revoke":
		return e.credentialRevoke(rest[2:])
	case cmd == "credential list":
		return e.credentialList(rest[2:])
	case cmd == "doctype create":
		return e.doctypeCreate(rest[2:])
	case cmd == "doctype list":
		return e.doctypeList(rest[2:])
	case cmd == "template create":
		return e.templateCreate(rest[2:])
	case cmd == "template list":
		return e.templateList(rest[2:])
	case cmd == "template show":
		return e.templateShow(rest[2:])
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", strings.Join(rest, " "))
}

// parseArgs splits positional arguments from flags given in any order.
func parseArgs(name string, args []string, define func(fs *flag.FlagSet)) ([]string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	define(fs)
	var positional []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				// -h: the command's flags, not just "help requested".
				var b strings.Builder
				fs.SetOutput(&b)
				fs.PrintDefaults()
				return nil, fmt.Errorf("%s: flags (see docrepoctl -h for the synopsis):\n%s", name, strings.TrimRight(b.String(), "\n"))
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		args = fs.Args()
		if len(args) > 0 {
			positional = append(positional, args[0])
			args = args[1:]
		}
	}
	return positional, nil
}

func exactly(name string, args []string, n int) error {
	if len(args) != n {
		return fmt.Errorf("%s: expected %d argument(s), got %d", name, n, len(args))
	}
	return nil
}

// adminSets are the migration sets of the data docrepoctl writes itself:
// identity (users, groups, keys) and the schema service's doc types and
// templates. Every service applies its own sets at start-up.
var adminSets = []database.MigrationSet{identity.Migrations, catalog.Migrations}

func (e env) migrate() error {
	applied, err := database.Migrate(e.ctx, e.pool, adminSets...)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "applied %d migration(s)\n", len(applied))
	return nil
}

func (e env) groupCreate(args []string) error {
	if err := exactly("group create", args, 1); err != nil {
		return err
	}
	g, err := identity.NewStore(e.pool).CreateGroup(e.ctx, args[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "group %d %s\n", g.ID, g.Name)
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (e env) userCreate(args []string) error {
	var groups string
	pos, err := parseArgs("user create", args, func(fs *flag.FlagSet) {
		fs.StringVar(&groups, "groups", "", "comma-separated groups")
	})
	if err != nil {
		return err
	}
	if err := exactly("user create", pos, 1); err != nil {
		return err
	}
	u, err := identity.NewStore(e.pool).CreateUser(e.ctx, pos[0], splitList(groups))
	if err != nil {
		return err
	}
	var names []string
	for _, g := range u.Groups {
		names = append(names, g.Name)
	}
	fmt.Fprintf(e.stdout, "user %d %s groups=%s\n", u.ID, u.Username, strings.Join(names, ","))
	return nil
}

func (e env) keyCreate(args []string) error {
	var scopes string
	var expiresIn time.Duration
	pos, err := parseArgs("key create", args, func(fs *flag.FlagSet) {
		fs.StringVar(&scopes, "scopes", "", "comma-separated scopes")
		fs.DurationVar(&expiresIn, "expires-in", 0, "lifetime, e.g. 720h (default: no expiry)")
	})
	if err != nil {
		return err
	}
	if err := exactly("key create", pos, 1); err != nil {
		return err
	}
	token, _, err := identity.NewStore(e.pool).CreateKey(e.ctx, pos[0], splitList(scopes), expiresIn)
	if err != nil {
		return err
	}
	// The token alone on stdout, so scripts can capture it.
	fmt.Fprintln(e.stdout, token)
	return nil
}

func (e env) keyRevoke(args []string) error {
	if err := exactly("key revoke", args, 1); err != nil {
		return err
	}
	id, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil {
		return fmt.Errorf("key revoke: %q is not a key id", args[0])
	}
	if err := identity.NewStore(e.pool).RevokeKey(e.ctx, id); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "revoked key %d\n", id)
	return nil
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func (e env) keyList(args []string) error {
	if len(args) > 1 {
		return errors.New("key list: at most one USERNAME")
	}
	user := ""
	if len(args) == 1 {
		user = args[0]
	}
	keys, err := identity.NewStore(e.pool).ListKeys(e.ctx, user)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUSER\tPREFIX\tSCOPES\tCREATED\tEXPIRES\tREVOKED\tLAST USED")
	for _, k := range keys {
		created := k.CreatedAt
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Username, k.Prefix, strings.Join(k.Scopes, ","),
			fmtTime(&created), fmtTime(k.ExpiresAt), fmtTime(k.RevokedAt), fmtTime(k.LastUsedAt))
	}
	return tw.Flush()
}

func (e env) credentialCreate(args []string) error {
	var scopes string
	var expiresIn time.Duration
	pos, err := parseArgs("credential create", args, func(fs *flag.FlagSet) {
		fs.StringVar(&scopes, "scopes", "", "comma-separated service scopes (internal, admin)")
		fs.DurationVar(&expiresIn, "expires-in", 0, "lifetime, e.g. 2160h (default: no expiry)")
	})
	if err != nil {
		return err
	}
	if err := exactly("credential create", pos, 1); err != nil {
		return err
	}
	token, _, err := identity.NewStore(e.pool).CreateServiceCredential(e.ctx, pos[0], splitList(scopes), expiresIn)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, token)
	return nil
}

func (e env) credentialRevoke(args []string) error {
	if err := exactly("credential revoke", args, 1); err != nil {
		return err
	}
	id, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil {
		return fmt.Errorf("credential revoke: %q is not a credential id", args[0])
	}
	if err := identity.NewStore(e.pool).RevokeServiceCredential(e.ctx, id); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "revoked service credential %d\n", id)
	return nil
}

func (e env) credentialList(args []string) error {
	if len(args) > 1 {
		return errors.New("credential list: at most one NAME")
	}
	name := ""
	if len(args) == 1 {
		name = args[0]
	}
	creds, err := identity.NewStore(e.pool).ListServiceCredentials(e.ctx, name)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tPREFIX\tSCOPES\tCREATED\tEXPIRES\tREVOKED\tLAST USED")
	for _, c := range creds {
		created := c.CreatedAt
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, c.Name, c.Prefix, strings.Join(c.Scopes, ","),
			fmtTime(&created), fmtTime(c.ExpiresAt), fmtTime(c.RevokedAt), fmtTime(c.LastUsedAt))
	}
	return tw.Flush()
}

func (e env) doctypeCreate(args []string) error {
	if err := exactly("doctype create", args, 1); err != nil {
		return err
	}
	d, err := catalog.NewStore(e.pool).CreateDocType(e.ctx, args[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "doctype %d %s\n", d.ID, d.Name)
	return nil
}
