package indexing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/extract"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/ocr"
	"github.com/docrepo/docrepo/pkg/ocrjobs"
	"github.com/docrepo/docrepo/pkg/search/engine"
	"github.com/docrepo/docrepo/pkg/tempfiles"
	"github.com/docrepo/docrepo/pkg/tracing"
)

// Source is what the indexer needs of the document service. A
// documentv1.DocumentServiceClient dialled with the service token satisfies
// it.
type Source interface {
	GetIndexDocument(ctx context.Context, in *documentv1.GetIndexDocumentRequest, opts ...grpc.CallOption) (*documentv1.GetIndexDocumentResponse, error)
	GetIndexDocuments(ctx context.Context, in *documentv1.GetIndexDocumentsRequest, opts ...grpc.CallOption) (*documentv1.GetIndexDocumentsResponse, error)
	SetContentSources(ctx context.Context, in *documentv1.SetContentSourcesRequest, opts ...grpc.CallOption) (*documentv1.SetContentSourcesResponse, error)
	ListDocumentIds(ctx context.Context, in *documentv1.ListDocumentIdsRequest, opts ...grpc.CallOption) (*documentv1.ListDocumentIdsResponse, error)
	DownloadFile(ctx context.Context, in *documentv1.DownloadFileRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[documentv1.DownloadFileResponse], error)
	SetContentSource(ctx context.Context, in *documentv1.SetContentSourceRequest, opts ...grpc.CallOption) (*documentv1.SetContentSourceResponse, error)
}

// Defaults of Options.
const (
	DefaultMaxFileBytes   = 256 << 20
	DefaultExtractTimeout = time.Minute
	DefaultMaxTextBytes   = 8 << 20
	DefaultMaxEmbedBytes  = 32 << 10
	DefaultWorkers        = 8
	DefaultVectorBatch    = 16
	DefaultVectorYield    = 5 * time.Second
	// DefaultCallTimeout bounds each unary call to the document service.
	DefaultCallTimeout = 30 * time.Second
	// DefaultEngineTimeout bounds each engine call (revision, delete,
	// batch write).
	DefaultEngineTimeout = time.Minute
	// DefaultDownloadIdle is how long a file download may go without
	// receiving a byte before it is given up.
	DefaultDownloadIdle = time.Minute
)

// Options configure an Indexer. Engine, Source and Embedder are required;
// zero values elsewhere take the defaults above.
type Options struct {
	Engine   engine.Engine
	Source   Source
	Embedder embed.Embedder
	Logger   *slog.Logger
	// MaxFileBytes: larger files are indexed without content.
	MaxFileBytes int64
	// ExtractTimeout bounds the text extraction of one file.
	ExtractTimeout time.Duration
	// MaxTextBytes caps the extracted text stored for one document.
	MaxTextBytes int
	// MaxPassages bounds the passages a document's content is embedded
	// as (default embed.DefaultMaxPassages): the content is cut into
	// overlapping windows of the embedder's size (pkg/embed/passage) and
	// each window gets a vector; text past the last window has none.
	MaxPassages int
	// MaxEmbedBytes caps the content text given to an embedder that does
	// not embed passages itself (openai: servers have input limits; the
	// start of a document is what they see), as one passage.
	MaxEmbedBytes int
	// DeferVectors makes content vectors a stage of their own (see
	// RunVectorStage): documents are written with full text and metadata
	// (and the metadata vector) first, marked VectorsPending, and their
	// passages are embedded afterwards. It needs an engine implementing
	// engine.VectorStage and is ignored otherwise.
	DeferVectors bool
	// VectorBatch is the number of documents the vector stage embeds and
	// writes at a time (default DefaultVectorBatch).
	VectorBatch int
	// VectorYield is the longest the vector stage rests between two
	// documents while text is indexed (default DefaultVectorYield;
	// negative: never rest, always embed whole batches). See
	// vectorstage.go.
	VectorYield time.Duration
	// TempDir holds downloaded files while they are extracted (default the
	// system's temporary directory).
	TempDir string
	// Workers is the number of documents of a batch loaded, downloaded and
	// extracted at once.
	Workers int
	// CallTimeout, EngineTimeout and DownloadIdle bound every outbound call
	// (see the defaults), so a hung document service, engine or blob
	// store fails the call instead of stalling the consumer for ever.
	CallTimeout   time.Duration
	EngineTimeout time.Duration
	DownloadIdle  time.Duration

	// OCR reads scanned pages and images; nil turns OCR off.
	OCR *ocr.Engine
	// OCRQueue holds the OCR jobs and caches OCR text (see ocrstage.go).
	// Without it, documents are read by OCR when they are indexed, also
	// by the event consumer.
	OCRQueue *ocrjobs.Store
	// OCRCache is where a purge erases the cached OCR text of its files
	// (Item.EraseFilehashes); default OCRQueue. It is set also when OCR
	// is off, so that text cached while it was on is erased too.
	OCRCache *ocrjobs.Store
	// OCRDocTypeLangs gives the OCR languages of documents by doc type
	// ("invoice" -> "deu+eng"); other documents use the engine's.
	OCRDocTypeLangs map[string]string
	// OCRMaxPages, OCRMaxPixels and OCRDPI: see extract.Options (zero:
	// the defaults).
	OCRMaxPages  int
	OCRMaxPixels int64
	OCRDPI       int

	// VerifyRetry and VerifyRetryMax bound the back-off of VerifyLoop
	// after a failed pass: it tries again after VerifyRetry, doubling up
	// to VerifyRetryMax, until a pass succeeds (defaults
	// DefaultVerifyRetry, DefaultVerifyRetryMax).
	VerifyRetry    time.Duration
	VerifyRetryMax time.Duration
}

// Indexer writes documents of record into a search engine.
type Indexer struct {
	o   Options
	log *slog.Logger
	// id is the embedder's identity: vectors are written only into an
	// engine recording it (see vectorsFit).
	id embed.Identity
	// withheld is when the last warning about withheld vectors was
	// logged (unix nanoseconds).
	withheld atomic.Int64
	// wake tells the vector stage that documents wait for vectors.
	wake chan struct{}
	// textRunning counts Index calls in progress and textDone is when
	// the last one ended (unix nanoseconds): the vector stage gives way
	// to them (vectorstage.go).
	textRunning atomic.Int64
	textDone    atomic.Int64
	// ocrWake tells the OCR stage that jobs were enqueued.
	ocrWake chan struct{}
	// repairing is set while the anti-entropy pass after a lost event
	// stream runs.
	repairing atomic.Bool
	// inlineOCR: read pages needing OCR when the document is indexed,
	// never through the queue (a rebuild's new index).
	inlineOCR bool
	// outages counts batches held through an outage (holdThroughOutage).
	outages atomic.Int64
	// noBatch is set once the document service turned out not to know the
	// batch calls (GetIndexDocuments, SetContentSources).
	noBatch atomic.Bool
	// mirror is the new index of a rebuild in progress, which every engine
	// write reaches as well (rebuild.go); nil when none runs. mirrorMu is
	// held for reading by each write (to the engine and the mirror) and
	// for writing while the rebuild switches.
	mirrorMu sync.RWMutex
	mirror   *mirror
}

// New returns an Indexer.
func New(o Options) (*Indexer, error) {
	if o.Engine == nil || o.Source == nil || o.Embedder == nil {
		return nil, errors.New("indexing: Engine, Source and Embedder are required")
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.ExtractTimeout <= 0 {
		o.ExtractTimeout = DefaultExtractTimeout
	}
	if o.MaxTextBytes <= 0 {
		o.MaxTextBytes = DefaultMaxTextBytes
	}
	if o.MaxEmbedBytes <= 0 {
		o.MaxEmbedBytes = DefaultMaxEmbedBytes
	}
	if o.MaxPassages <= 0 {
		o.MaxPassages = embed.DefaultMaxPassages
	}
	if o.VectorYield == 0 {
		o.VectorYield = DefaultVectorYield
	}
	if o.VectorBatch <= 0 {
		o.VectorBatch = DefaultVectorBatch
	}
	if _, ok := o.Engine.(engine.VectorStage); !ok {
		o.DeferVectors = false
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.EngineTimeout <= 0 {
		o.EngineTimeout = DefaultEngineTimeout
	}
	if o.DownloadIdle <= 0 {
		o.DownloadIdle = DefaultDownloadIdle
	}
	if o.VerifyRetry <= 0 {
		o.VerifyRetry = DefaultVerifyRetry
	}
	if o.VerifyRetryMax < o.VerifyRetry {
		o.VerifyRetryMax = max(DefaultVerifyRetryMax, o.VerifyRetry)
	}
	if o.OCRCache == nil {
		o.OCRCache = o.OCRQueue
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	// Downloads a killed predecessor left are removed.
	if removed, err := tempfiles.Sweep(o.TempDir, TempPrefix); err != nil {
		log.Warn("could not sweep the temporary files of earlier processes", "error", err)
	} else if len(removed) > 0 {
		log.Info("removed the temporary files of earlier processes", "files", len(removed))
	}
	return &Indexer{o: o, log: log, id: embed.IdentityOf(o.Embedder), wake: make(chan struct{}, 1),
		ocrWake: make(chan struct{}, 1)}, nil
}

// Engine returns the engine the indexer writes.
func (ix *Indexer) Engine() engine.Engine { return ix.o.Engine }

// Item asks for one document to be brought up to date.
type Item struct {
	ID int64
	// Rev is a revision the document is known to have reached (an event's
	// rev), or 0 when unknown (reindex). When the engine holds Rev or newer,
	// the document is not loaded at all.
	Rev int64
	// DegradeContent: when the file cannot be downloaded, index the
	// document without content instead of failing (last attempts).
	DegradeContent bool
	// DeferOCR: when the document needs OCR and its text is not cached,
	// write its text layer now and enqueue an OCR job (Options.OCRQueue)
	// instead of reading it (the event consumer does, so that no scan
	// ever holds an event).
	DeferOCR bool
	// Reread: index the document also when the engine holds its revision
	// already, because that revision was written without its file's text
	// (the anti-entropy pass sets it for documents whose file the
	// document service records as not read).
	Reread bool
	// EraseFilehashes are files (SHA-256, hex) whose cached OCR text goes
	// once the item is handled: a purge's files that no other document
	// has (the purged event's erased_filehashes).
	EraseFilehashes []string
	// Cause is the trace context of the write that caused the event (from
	// its traceparent header): indexing continues that trace, so the calls
	// to the document service carry it too. Zero when unknown.
	Cause trace.SpanContext
}

// Outcome says what happened to one Item.
type Outcome int

// Outcomes.
const (
	// Failed: a transient failure; retry later (Result.Err says why).
	Failed Outcome = iota
	// Written: the engine stored the document.
	Written
	// Current: the engine already held this revision or a newer one.
	Current
	// Deleted: the document no longer exists and was removed.
	Deleted
)

func (o Outcome) String() string {
	switch o {
	case Written:
		return "written"
	case Current:
		return "current"
	case Deleted:
		return "deleted"
	}
	return "failed"
}

// Result is the outcome of one Item.
type Result struct {
	Outcome Outcome
	// Err is set when Outcome is Failed.
	Err error
	// ContentErr is set when the document was written without content
	// because its file could not be fetched or extracted.
	ContentErr error
	// Source tells where the written content came from (text, ocr, none);
	// empty when nothing was written.
	Source extract.ContentSource
	// OCRErr is set when OCR failed for some or all pages; the document
	// was written with the text that could be read.
	OCRErr error
	// OCRQueued: the document was written with its text layer and an OCR
	// job was enqueued for the pages that need OCR (Item.DeferOCR).
	OCRQueued bool
}

// prepared is one item after loading.
type prepared struct {
	outcome    Outcome
	err        error
	contentErr error
	ocrErr     error
	source     extract.ContentSource
	doc        *engine.Document
	// report is the content source to record before the write, if any.
	report *documentv1.SetContentSourceRequest
	// ocrJob is the OCR job to enqueue before the write, if any.
	ocrJob *ocrjobs.Job
}

// Index brings the items' documents up to date in the engine and reports
// one Result per item, in order. Items of the same document should be
// merged by the caller (keep the highest Rev); Index handles them anyway.
func (ix *Indexer) Index(ctx context.Context, items []Item) []Result {
	ix.textBegin()
	defer ix.textEnd()
	preps := ix.prepareAll(ctx, items)
	ix.eraseOCRText(ctx, items, preps)

	// Embed everything to write in two batched calls.
	var docs []*engine.Document
	var idx []int
	for i := range preps {
		if preps[i].doc != nil && preps[i].err == nil {
			docs = append(docs, preps[i].doc)
			idx = append(idx, i)
		}
	}
	results := make([]Result, len(items))
	for i, p := range preps {
		results[i] = Result{Outcome: p.outcome, Err: p.err, ContentErr: p.contentErr, OCRErr: p.ocrErr, OCRQueued: p.ocrJob != nil}
	}
	if len(docs) == 0 {
		return results
	}
	fail := func(err error) []Result {
		for _, i := range idx {
			results[i] = Result{Outcome: Failed, Err: err}
		}
		return results
	}
	fit, err := ix.embed(ctx, docs, ix.o.DeferVectors)
	if err != nil {
		return fail(fmt.Errorf("embed: %w", err))
	}
	batch := make([]engine.Document, 0, len(docs))
	seen := make(map[int64]int, len(docs))
	for _, d := range docs {
		// One document per id per write: keep the newest load.
		if j, ok := seen[d.ID]; ok {
			if d.Rev > batch[j].Rev {
				batch[j] = *d
			}
			continue
		}
		seen[d.ID] = len(batch)
		batch = append(batch, *d)
	}
	if err := ix.upsert(ctx, batch, fit); err != nil {
		return fail(fmt.Errorf("engine upsert: %w", err))
	}
	for _, i := range idx {
		results[i].Outcome = Written
		results[i].Source = preps[i].source
	}
	if ix.o.DeferVectors {
		ix.wakeStage()
	}
	return results
}

// prepareAll loads the items: the engine's revisions first (an item the
// engine holds already costs nothing more), then the documents in batched
// GetIndexDocuments calls with small files inline, then each document's
// content (Workers at once), and last the content sources in one
// SetContentSources call and the OCR jobs in one enqueue. A nil doc with a
// nil err means nothing to write.
func (ix *Indexer) prepareAll(ctx context.Context, items []Item) []prepared {
	preps := make([]prepared, len(items))
	states := make([]loadState, len(items))
	var load []int
	for i, it := range items {
		states[i] = ix.checkRevision(ctx, it)
		if states[i].done != nil {
			preps[i] = *states[i].done
		} else {
			load = append(load, i)
		}
	}
	if len(load) == 0 {
		return preps
	}
	toLoad := make([]Item, len(load))
	for j, i := range load {
		toLoad[j] = items[i]
	}
	resps, errs := ix.loadDocuments(ctx, toLoad)
	var wg sync.WaitGroup
	sem := make(chan struct{}, ix.o.Workers)
	for j, i := range load {
		if errs[j] != nil {
			preps[i] = prepared{err: fmt.Errorf("get document %d: %w", items[i].ID, errs[j])}
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			preps[i] = ix.prepare(ctx, items[i], states[i], resps[j])
		}()
	}
	wg.Wait()
	ix.reportSources(ctx, preps)
	ix.enqueueOCR(ctx, preps)
	return preps
}

// eraseOCRText erases the cached OCR text of the items' EraseFilehashes
// (a purge's) in one statement, once their engine delete is done; a
// failure fails those items, whose events then come again.
func (ix *Indexer) eraseOCRText(ctx context.Context, items []Item, preps []prepared) {
	var hashes []string
	var idx []int
	for i, it := range items {
		if len(it.EraseFilehashes) > 0 && preps[i].err == nil {
			hashes = append(hashes, it.EraseFilehashes...)
			idx = append(idx, i)
		}
	}
	if len(hashes) == 0 {
		return
	}
	if ix.o.OCRCache == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, ix.o.CallTimeout)
	n, err := ix.o.OCRCache.Erase(cctx, hashes)
	cancel()
	if err != nil {
		for _, i := range idx {
			preps[i] = prepared{err: fmt.Errorf("erase cached OCR text: %w", err)}
		}
		return
	}
	if n > 0 {
		ix.log.Info("erased the cached OCR text of purged files", "files", len(hashes), "entries", n)
	}
}

// loadState is what checkRevision found of an item in the engine.
type loadState struct {
	stored int64
	have   bool
	// done, when set, is the item's outcome: nothing to load.
	done *prepared
}

// checkRevision reads the revision the engine holds of an item.
func (ix *Indexer) checkRevision(ctx context.Context, it Item) loadState {
	ectx, cancel := context.WithTimeout(ctx, ix.o.EngineTimeout)
	stored, have, err := ix.o.Engine.Revision(ectx, it.ID)
	cancel()
	if err != nil {
		return loadState{done: &prepared{err: fmt.Errorf("engine revision of %d: %w", it.ID, err)}}
	}
	if it.Rev > 0 && have && (stored > it.Rev || stored == it.Rev && !it.Reread) {
		return loadState{done: &prepared{outcome: Current}}
	}
	return loadState{stored: stored, have: have}
}

// InlineMaxBytes: files up to this size come with the documents
// (GetIndexDocuments) instead of a download each.
const InlineMaxBytes = 256 << 10

// indexBatchMax is the most documents asked for in one GetIndexDocuments.
const indexBatchMax = 500

// loadDocuments gets the documents of items from the document service, in
// batches; errs[i] is set for those that could not be read. A batch call
// refused for any other reason than an unreachable or overloaded service
// is followed by calls for one document at a time, so that a refusal is
// only ever its own document's (a refused document must not take the
// others with it); when the service is unreachable the whole batch fails
// (and the consumer holds it through the outage). A document service without the batch call (an older
// version during an upgrade) is asked one document at a time from then on.
//
// A batch call continues the trace of the first item's writer and links
// the others' (one call cannot have several parents).
func (ix *Indexer) loadDocuments(ctx context.Context, items []Item) ([]*documentv1.GetIndexDocumentResponse, []error) {
	resps := make([]*documentv1.GetIndexDocumentResponse, len(items))
	errs := make([]error, len(items))
	for from := 0; from < len(items); from += indexBatchMax {
		to := min(from+indexBatchMax, len(items))
		if !ix.noBatch.Load() {
			err := ix.loadBatch(ctx, items[from:to], resps[from:to])
			if err == nil || ctx.Err() != nil || unreachable(err) {
				for i := from; i < to && err != nil; i++ {
					errs[i] = err
				}
				continue
			}
			if status.Code(err) == codes.Unimplemented {
				ix.log.Info("the document service has no GetIndexDocuments (an older version); loading documents one by one")
				ix.noBatch.Store(true)
			}
		}
		for i := from; i < to; i++ {
			ictx := ctx
			if items[i].Cause.IsValid() {
				ictx = trace.ContextWithRemoteSpanContext(ctx, items[i].Cause)
			}
			cctx, cancel := context.WithTimeout(ictx, ix.o.CallTimeout)
			resps[i], errs[i] = ix.o.Source.GetIndexDocument(cctx, &documentv1.GetIndexDocumentRequest{DocId: items[i].ID})
			cancel()
		}
	}
	return resps, errs
}

// loadBatch reads items with one GetIndexDocuments call into resps.
func (ix *Indexer) loadBatch(ctx context.Context, items []Item, resps []*documentv1.GetIndexDocumentResponse) error {
	ids := make([]int64, len(items))
	var links []trace.Link
	for i, it := range items {
		ids[i] = it.ID
		if it.Cause.IsValid() {
			if len(links) == 0 {
				ctx = trace.ContextWithRemoteSpanContext(ctx, it.Cause)
			}
			links = append(links, trace.Link{SpanContext: it.Cause})
		}
	}
	ctx, span := tracing.Tracer("indexing").Start(ctx, "load documents",
		trace.WithLinks(links...), trace.WithAttributes(attribute.Int("docrepo.documents", len(ids))))
	defer span.End()
	cctx, cancel := context.WithTimeout(ctx, ix.o.CallTimeout)
	defer cancel()
	resp, err := ix.o.Source.GetIndexDocuments(cctx, &documentv1.GetIndexDocumentsRequest{
		DocIds: ids, InlineMaxBytes: min(InlineMaxBytes, ix.o.MaxFileBytes)})
	if err != nil {
		return err
	}
	if len(resp.GetDocuments()) != len(ids) {
		return fmt.Errorf("the document service answered %d documents for %d ids", len(resp.GetDocuments()), len(ids))
	}
	copy(resps, resp.GetDocuments())
	return nil
}

// prepare turns one loaded document into what to write: its deletion, or
// the document with its content.
func (ix *Indexer) prepare(ctx context.Context, it Item, st loadState, resp *documentv1.GetIndexDocumentResponse) prepared {
	if it.Cause.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, it.Cause)
	}
	ctx, span := tracing.Tracer("indexing").Start(ctx, "index document",
		trace.WithAttributes(attribute.Int64("docrepo.doc_id", it.ID), attribute.Int64("docrepo.rev", it.Rev)))
	defer span.End()
	stored, have := st.stored, st.have
	if resp.GetDeleted() || resp.GetDocument() == nil {
		// Ids are never reused: whatever the engine holds is gone.
		if err := ix.remove(ctx, it.ID, max(stored, it.Rev)); err != nil {
			return prepared{err: fmt.Errorf("engine delete %d: %w", it.ID, err)}
		}
		return prepared{outcome: Deleted}
	}
	src := resp.GetDocument()
	if have && (stored > src.GetRev() || stored == src.GetRev() && !it.Reread) {
		return prepared{outcome: Current}
	}
	doc := toEngineDocument(src)
	doc.Reread = it.Reread
	p := prepared{doc: doc, source: extract.SourceNone}
	if f := src.GetFile(); f != nil && f.GetOwnid() != 0 {
		if failed := ix.prepareContent(ctx, it, src, &p); failed != nil {
			return *failed
		}
	}
	return p
}

// prepareContent reads the content of a document's file into p: its
// text, where it came from, the report of that to the document service
// and the OCR job it owes. A non-nil result replaces p: the item failed.
func (ix *Indexer) prepareContent(ctx context.Context, it Item, src *documentv1.IndexDocument, p *prepared) *prepared {
	f, doc := src.GetFile(), p.doc
	ex, contentErr := ix.content(ctx, it, src.GetDocument().GetDocType(), f)
	doc.Content, p.source, p.ocrErr, p.contentErr = ex.text, ex.source, ex.ocrErr, contentErr
	if ex.ocrPending {
		p.ocrJob = &ocrjobs.Job{DocID: it.ID, Rev: doc.Rev, Owner: src.GetDocument().GetEntryPerson(), Pages: ex.ocrNeeded}
	}
	if p.ocrErr != nil {
		ix.log.Warn("OCR failed for some or all pages; indexing the text that could be read", "doc_id", it.ID, "rev", doc.Rev,
			"pages_needing_ocr", ex.ocrNeeded, "source", p.source, "error", p.ocrErr)
		metricOCRFailed.WithLabelValues(ocrFailureReason(p.ocrErr)).Inc()
	}
	if contentErr != nil {
		var dl *downloadError
		unreadable := errors.As(contentErr, &dl)
		if unreadable && !it.DegradeContent {
			return &prepared{err: contentErr}
		}
		if !unreadable {
			// The file was read and has no usable text (too large,
			// not extractable): that is its content source. A file
			// that could not be downloaded stays unrecorded, so the
			// anti-entropy pass reads it again later.
			p.source = extract.SourceNone
		}
		if ctx.Err() != nil {
			return &prepared{err: ctx.Err()}
		}
		ix.log.Warn("indexing document without content", "doc_id", it.ID, "rev", doc.Rev, "error", contentErr)
		metricFailed.WithLabelValues(failureReason(contentErr)).Inc()
	}
	if string(p.source) != f.GetContentSource() && p.source != "" {
		p.report = &documentv1.SetContentSourceRequest{DocId: it.ID, FileId: f.GetOwnid(), Source: string(p.source)}
	}
	return nil
}

// reportSources tells the document service where files' text came from
// (GET's content_source), where that differs from what it has, in one call.
// It is done before the engine write, so a failed report fails the items
// and the retry makes it again. A document service that does not know the
// call, or a document gone meanwhile, is no reason to hold indexing back.
func (ix *Indexer) reportSources(ctx context.Context, preps []prepared) {
	var reqs []*documentv1.SetContentSourceRequest
	var idx []int
	for i := range preps {
		if preps[i].report != nil && preps[i].err == nil {
			reqs = append(reqs, preps[i].report)
			idx = append(idx, i)
		}
	}
	for from := 0; from < len(reqs); from += indexBatchMax {
		to := min(from+indexBatchMax, len(reqs))
		var err error
		if !ix.noBatch.Load() {
			cctx, cancel := context.WithTimeout(ctx, ix.o.CallTimeout)
			_, err = ix.o.Source.SetContentSources(cctx, &documentv1.SetContentSourcesRequest{Sources: reqs[from:to]})
			cancel()
			if status.Code(err) == codes.Unimplemented {
				ix.noBatch.Store(true)
			}
		}
		if ix.noBatch.Load() {
			for j := from; j < to; j++ {
				if err := ix.reportSource(ctx, reqs[j]); err != nil {
					preps[idx[j]] = prepared{err: err}
				}
			}
			continue
		}
		switch status.Code(err) {
		case codes.OK:
		case codes.NotFound, codes.InvalidArgument:
			ix.log.Warn("content sources not recorded", "files", to-from, "error", err)
		default:
			for j := from; j < to; j++ {
				preps[idx[j]] = prepared{err: fmt.Errorf("record content source of %d: %w", reqs[j].GetDocId(), err)}
			}
		}
	}
}

// reportSource records one content source (SetContentSource), for a
// document service without SetContentSources.
func (ix *Indexer) reportSource(ctx context.Context, req *documentv1.SetContentSourceRequest) error {
	cctx, cancel := context.WithTimeout(ctx, ix.o.CallTimeout)
	defer cancel()
	_, err := ix.o.Source.SetContentSource(cctx, req)
	switch status.Code(err) {
	case codes.OK:
		return nil
	case codes.Unimplemented, codes.NotFound, codes.InvalidArgument:
		ix.log.Warn("content source not recorded", "doc_id", req.GetDocId(), "file_id", req.GetFileId(), "source", req.GetSource(), "error", err)
		return nil
	}
	return fmt.Errorf("record content source of %d: %w", req.GetDocId(), err)
}

// embed fills the content passage vectors and the metadata vectors of
// docs, when the engine holds vectors of this indexer's embedder (or none
// yet), and reports whether it did; otherwise it leaves them without
// vectors. With deferContent the content is not embedded: documents with
// content are marked VectorsPending for the vector stage.
func (ix *Indexer) embed(ctx context.Context, docs []*engine.Document, deferContent bool) (bool, error) {
	fit, err := ix.vectorsFit(ctx)
	if err != nil || !fit {
		return false, err
	}
	// Empty texts get no vector: such a document is never a nearest
	// neighbour for that target.
	var contents, metas []string
	var withContent, withMeta []*engine.Document
	for _, d := range docs {
		if d.Content != "" && deferContent {
			d.VectorsPending = true
		} else if d.Content != "" {
			contents = append(contents, d.Content)
			withContent = append(withContent, d)
		}
		if t := engine.MetadataText(d); t != "" {
			metas = append(metas, t)
			withMeta = append(withMeta, d)
		}
	}
	if len(contents) > 0 {
		vecs, err := ix.passages(ctx, contents)
		if err != nil {
			return false, err
		}
		for i, d := range withContent {
			d.ContentVectors = vecs[i]
		}
	}
	if len(metas) > 0 {
		vecs, err := embed.Metadata(ctx, ix.o.Embedder, metas)
		if err != nil {
			return false, err
		}
		if len(vecs) != len(metas) {
			return false, fmt.Errorf("embedder returned %d vectors for %d texts", len(vecs), len(metas))
		}
		for i, d := range withMeta {
			d.MetadataVector = vecs[i]
		}
	}
	return true, nil
}

// passages embeds each text as passages and returns their vectors.
func (ix *Indexer) passages(ctx context.Context, texts []string) ([][][]float32, error) {
	ps, err := embed.Passages(ctx, ix.o.Embedder, texts, ix.o.MaxPassages, ix.o.MaxEmbedBytes)
	if err != nil {
		return nil, err
	}
	if len(ps) != len(texts) {
		return nil, fmt.Errorf("embedder returned passages for %d of %d texts", len(ps), len(texts))
	}
	out := make([][][]float32, len(ps))
	for i, p := range ps {
		metricPassages.Add(float64(len(p)))
		out[i] = make([][]float32, len(p))
		for j := range p {
			out[i][j] = p[j].Vector
		}
	}
	return out, nil
}

// vectorsFit reports whether the engine may take this indexer's vectors:
// it records the same embedder, or none (a new or reset index: then this
// one is recorded first). An engine recording another embedder holds
// vectors these cannot be compared with: documents are written without
// vectors until the index is rebuilt (CheckEmbedder, Rebuild), and a
// warning says so at most once a minute.
func (ix *Indexer) vectorsFit(ctx context.Context) (bool, error) {
	ectx, cancel := context.WithTimeout(ctx, ix.o.EngineTimeout)
	defer cancel()
	got, ok, err := ix.o.Engine.Embedder(ectx)
	if err != nil {
		return false, fmt.Errorf("engine embedder: %w", err)
	}
	if !ok {
		if err := ix.o.Engine.SetEmbedder(ectx, ix.id); err != nil {
			return false, fmt.Errorf("record the embedder in the engine: %w", err)
		}
		ix.log.Info("the index records this embedder", "embedder", ix.id.String())
		return true, nil
	}
	if got.Compatible(ix.id) {
		return true, nil
	}
	metricWithheld.Inc()
	if now := time.Now().UnixNano(); now-ix.withheld.Load() > int64(time.Minute) {
		ix.withheld.Store(now)
		ix.log.Warn("the index holds vectors of another embedder: writing documents without vectors until it is rebuilt",
			"index_embedder", got.String(), "embedder", ix.id.String())
	}
	return false, nil
}

// toEngineDocument maps the document service's view to the engine's.
func toEngineDocument(src *documentv1.IndexDocument) *engine.Document {
	d := src.GetDocument()
	doc := &engine.Document{
		ID:              d.GetId(),
		Rev:             src.GetRev(),
		GroupIDs:        append([]int64(nil), src.GetGroupIds()...),
		FolderIDs:       append([]int64(nil), src.GetFolderIds()...),
		Description:     nonEmpty(d.GetDescription()),
		DocNumber:       d.DocNumber,
		DocType:         d.DocType,
		DocStatus:       d.DocStatus,
		ReferenceNumber: d.ReferenceNumber,
		FromEntity:      d.FromEntity,
		ToEntity:        d.ToEntity,
		EntryPerson:     nonEmpty(d.GetEntryPerson()),
		RevNumber:       d.RevNumber,
		Subdoctype:      d.Subdoctype,
		Privileged:      d.GetPrivileged(),
		IsLocked:        d.GetIslocked(),
	}
	if d.GetDate() != nil {
		t := d.GetDate().AsTime()
		doc.Date = &t
	}
	if d.GetEntryDate() != nil {
		t := d.GetEntryDate().AsTime()
		doc.EntryDate = &t
	}
	return doc
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// unreachable reports whether a call failed because the service could not
// be reached or is overloaded, rather than because of what was asked.
func unreachable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.ResourceExhausted:
		return true
	}
	return false
}

// transient reports whether a gRPC failure is worth retrying. Everything is,
// except requests the server will refuse the same way every time.
func transient(err error) bool {
	switch status.Code(err) {
	case codes.InvalidArgument, codes.Unimplemented:
		return false
	}
	return true
}
