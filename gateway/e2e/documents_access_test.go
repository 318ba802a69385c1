package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/docrepo/docrepo/pkg/auth"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/grpcclient"
)

// TestCrossUserAccess: a document is visible only to users sharing one of
// its groups. Everyone else gets the same 404 as for a document that does
// not exist, on every route, and nothing changes.
func TestCrossUserAccess(t *testing.T) {
	t.Parallel()
	owner := newDocUser(t)
	stranger := newDocUser(t)
	colleague := newUser(t, []string{owner.group, uniq("g")})
	content := uniqText(t, 1000)
	res := owner.uploadFile("private.txt", content)
	id := strconv.FormatInt(res.DocID, 10)
	rev := docRev(t, res.DocID)
	refusedVersion := uniqText(t, 20_000)

	routes := []struct {
		method, path string
		body         any
	}{
		{"GET", "/apiv2/pub/documents/" + id, nil},
		{"GET", "/apiv2/pub/documents/" + id + "?include=versions,folders,customfields", nil},
		{"GET", "/apiv3/pub/documents/" + id + "/versions", nil},
		{"GET", "/apiv2/pub/documents/" + id + "/download", nil},
		{"GET", "/apiv2/pub/documents/" + id + "/download?linked_file_id=" + strconv.FormatInt(res.LinkedFileID, 10), nil},
		{"PATCH", "/apiv3/pub/documents/" + id, map[string]any{"description": "stolen"}},
		{"POST", "/apiv3/pub/documents/" + id + "/lock", nil},
		{"POST", "/apiv3/pub/documents/" + id + "/unlock", nil},
		{"POST", "/apiv3/pub/documents/" + id + "/versions", multipartParts(t, filePart("evil.txt", refusedVersion))},
		{"PUT", "/apiv3/pub/documents/" + id + "/customfields/1", map[string]any{"rows": []any{}}},
	}
	for _, rt := range routes {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			if p, ok := rt.body.(*multipartPayload); ok {
				_, _ = p.Seek(0, 0)
			}
			expect(t, stranger.do(rt.method, rt.path, rt.body), 404, "Document not found")
		})
	}
	if got := docRev(t, res.DocID); got != rev {
		t.Fatalf("refused calls changed rev %d -> %d", rev, got)
	}
	noBlobsLeft(t, refusedVersion, "refused version upload")
	d := owner.getDoc(res.DocID, "")
	if d.Description != "private.txt" || d.Islocked || len(d.LinkedFiles) != 1 {
		t.Fatalf("document changed: %+v", d)
	}
	// A user sharing one group sees it and can download it.
	if d := colleague.getDoc(res.DocID, ""); d.ID != res.DocID {
		t.Fatalf("colleague sees %+v", d)
	}
	r := colleague.do("GET", downloadPath(res.DocID, ""), nil)
	expect(t, r, 200)
	if string(r.Body) != string(content) {
		t.Fatal("colleague downloaded other bytes")
	}
	// Unknown include values are refused, before anything else.
	expect(t, owner.do("GET", "/apiv2/pub/documents/"+id+"?include=history", nil), 400,
		`Invalid value for include: unknown item "history" (allowed: versions, folders, customfields)`)
	expect(t, owner.do("GET", "/apiv2/pub/documents/"+id+"?include=versions,,folders", nil), 200)
	expect(t, owner.do("GET", "/apiv2/pub/documents/999999999", nil), 404, "Document not found")
	expect(t, owner.do("GET", "/apiv2/pub/documents/abc", nil), 400)
	expect(t, owner.do("GET", "/apiv2/pub/documents/999999999/download", nil), 404, "Document not found")
}

// documentClient calls the document service directly over gRPC as c.
func documentClient(t *testing.T, c *client) (documentv1.DocumentServiceClient, context.Context) {
	t.Helper()
	conn, err := grpcclient.Dial(stk.addrs["document"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+c.token)
	return documentv1.NewDocumentServiceClient(conn), ctx
}

// TestInternalCallers: the indexer's RPCs need the internal scope, see every
// document regardless of groups, and report a missing document as deleted.
func TestInternalCallers(t *testing.T) {
	t.Parallel()
	owner := newDocUser(t)
	content := uniqText(t, 500)
	res := owner.uploadFile("indexed.txt", content, field("doc_status", "new"))
	expect(t, owner.do("PATCH", fmt.Sprintf("/apiv3/pub/documents/%d", res.DocID), map[string]any{"doc_status": "seen"}), 200)

	indexer := newService(t, auth.ScopeInternal)
	docs, ctx := documentClient(t, indexer)
	got, err := docs.GetIndexDocument(ctx, &documentv1.GetIndexDocumentRequest{DocId: res.DocID})
	if err != nil {
		t.Fatal(err)
	}
	idx := got.GetDocument()
	if got.GetDeleted() || idx.GetRev() != 2 || idx.GetDocument().GetDocStatus() != "seen" ||
		!slices.Equal(idx.GetFolderIds(), []int64{owner.folder.FolderID}) || len(idx.GetGroupIds()) != 1 ||
		idx.GetFile().GetFilehash() != sha256Hex(content) || idx.GetFile().GetOwnid() != res.LinkedFileID ||
		idx.GetFile().GetImageType() != "text/plain; charset=utf-8" {
		t.Fatalf("index document = %v", got)
	}
	missing, err := docs.GetIndexDocument(ctx, &documentv1.GetIndexDocumentRequest{DocId: 999_999_999})
	if err != nil || !missing.GetDeleted() || missing.GetDocument() != nil {
		t.Fatalf("missing document = %v, %v", missing, err)
	}
	// The internal caller downloads any document.
	stream, err := docs.DownloadFile(ctx, &documentv1.DownloadFileRequest{DocId: res.DocID})
	if err != nil {
		t.Fatal(err)
	}
	var body []byte
	for {
		msg, err := stream.Recv()
		if err != nil {
			break
		}
		body = append(body, msg.GetChunk()...)
	}
	if string(body) != string(content) {
		t.Fatalf("internal download = %q", body)
	}
	// Paging through ids reaches this document.
	var after int64
	found := false
	for page := 0; page < 10_000 && !found; page++ {
		ids, err := docs.ListDocumentIds(ctx, &documentv1.ListDocumentIdsRequest{AfterId: after, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		if page == 0 && ids.GetTotal() < 1 {
			t.Fatalf("the first page's total is %d, want at least this document", ids.GetTotal())
		}
		if len(ids.GetIds()) == 0 {
			break
		}
		if !slices.IsSorted(ids.GetIds()) || ids.GetIds()[0] <= after {
			t.Fatalf("ids not ascending after %d: %v", after, ids.GetIds())
		}
		found = slices.Contains(ids.GetIds(), res.DocID)
		after = ids.GetIds()[len(ids.GetIds())-1]
	}
	if !found {
		t.Fatalf("ListDocumentIds never returned document %d", res.DocID)
	}
	_, err = docs.ListDocumentIds(ctx, &documentv1.ListDocumentIdsRequest{Limit: 10_001})
	wantGRPC(t, err, codes.InvalidArgument, "limit must be between 1 and 10000")

	// A public key may not call the internal RPCs.
	public, pctx := documentClient(t, owner.client)
	_, err = public.GetIndexDocument(pctx, &documentv1.GetIndexDocumentRequest{DocId: res.DocID})
	wantGRPC(t, err, codes.PermissionDenied, "Missing required scope: internal")
	_, err = public.ListDocumentIds(pctx, &documentv1.ListDocumentIdsRequest{})
	wantGRPC(t, err, codes.PermissionDenied, "Missing required scope: internal")
}

// TestIndexBatchCalls: GetIndexDocuments answers, in order and from one
// snapshot, what GetIndexDocument answers for each id (missing ones as
// deleted), with files no larger than inline_max_bytes inline; and
// SetContentSources records the sources of current files only. Both need
// the internal scope and refuse oversized requests.
func TestIndexBatchCalls(t *testing.T) {
	t.Parallel()
	owner := newDocUser(t)
	small := uniqText(t, 300)
	large := uniqText(t, 5000)
	a := owner.uploadFile("small.txt", small)
	b := owner.uploadFile("large.txt", large)
	// Indexed (content sources recorded), so that the indexer changes
	// nothing while the calls are compared.
	owner.waitIndexed(a.DocID, b.DocID)
	indexer := newService(t, auth.ScopeInternal)
	docs, ctx := documentClient(t, indexer)
	ids := []int64{b.DocID, 999_999_999, a.DocID}
	got, err := docs.GetIndexDocuments(ctx, &documentv1.GetIndexDocumentsRequest{DocIds: ids, InlineMaxBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.GetDocuments()) != len(ids) {
		t.Fatalf("%d answers for %d ids", len(got.GetDocuments()), len(ids))
	}
	for i, id := range ids {
		one, err := docs.GetIndexDocument(ctx, &documentv1.GetIndexDocumentRequest{DocId: id})
		if err != nil {
			t.Fatal(err)
		}
		batch := got.GetDocuments()[i]
		if batch.GetDeleted() != one.GetDeleted() {
			t.Fatalf("doc %d: deleted %v in the batch, %v alone", id, batch.GetDeleted(), one.GetDeleted())
		}
		if one.GetDeleted() {
			continue
		}
		bd, od := batch.GetDocument(), one.GetDocument()
		if bd.GetRev() != od.GetRev() || bd.GetDocument().GetId() != id || bd.GetDocument().GetDescription() != od.GetDocument().GetDescription() ||
			!slices.Equal(bd.GetGroupIds(), od.GetGroupIds()) || !slices.Equal(bd.GetFolderIds(), od.GetFolderIds()) ||
			bd.GetFile().GetOwnid() != od.GetFile().GetOwnid() || bd.GetFile().GetFilehash() != od.GetFile().GetFilehash() ||
			bd.GetFile().GetImageSize() != od.GetFile().GetImageSize() || bd.GetFile().GetContentSource() != od.GetFile().GetContentSource() {
			t.Fatalf("doc %d: batch %v, alone %v", id, bd, od)
		}
	}
	if f := got.GetDocuments()[2].GetDocument().GetFile(); !f.GetInline() || string(f.GetContent()) != string(small) {
		t.Fatalf("small file: inline %v, %d bytes; want inline, its %d bytes", f.GetInline(), len(f.GetContent()), len(small))
	}
	if f := got.GetDocuments()[0].GetDocument().GetFile(); f.GetInline() || len(f.GetContent()) != 0 {
		t.Fatalf("file over inline_max_bytes came inline (%d bytes)", len(f.GetContent()))
	}

	// A new version makes the first file stale: only the current one is recorded.
	r := owner.do("POST", fmt.Sprintf("/apiv3/pub/documents/%d/versions", a.DocID), multipartParts(t, filePart("small-v2.txt", uniqText(t, 200))))
	expect(t, r, 200)
	var l versionListing
	r.JSON(t, &l)
	current := l.Current.OwnID
	eventually(t, indexWait, func() error {
		if d := owner.getDoc(a.DocID, ""); d.ContentSource == nil || *d.ContentSource != "text" {
			return fmt.Errorf("new version's content_source %v, want text", d.ContentSource)
		}
		return nil
	})
	set, err := docs.SetContentSources(ctx, &documentv1.SetContentSourcesRequest{Sources: []*documentv1.SetContentSourceRequest{
		{DocId: a.DocID, FileId: a.LinkedFileID, Source: "text"},
		{DocId: a.DocID, FileId: current, Source: "ocr"},
	}})
	if err != nil || !slices.Equal(set.GetApplied(), []bool{false, true}) {
		t.Fatalf("SetContentSources = %v, %v; want [false true]", set.GetApplied(), err)
	}
	after, err := docs.GetIndexDocument(ctx, &documentv1.GetIndexDocumentRequest{DocId: a.DocID})
	if err != nil || after.GetDocument().GetFile().GetContentSource() != "ocr" {
		t.Fatalf("content source after SetContentSources = %v, %v", after, err)
	}

	_, err = docs.GetIndexDocuments(ctx, &documentv1.GetIndexDocumentsRequest{DocIds: make([]int64, 1001)})
	wantGRPC(t, err, codes.InvalidArgument, "Too many doc_ids: at most 1000")
	_, err = docs.GetIndexDocuments(ctx, &documentv1.GetIndexDocumentsRequest{DocIds: ids, InlineMaxBytes: 2 << 20})
	wantGRPC(t, err, codes.InvalidArgument, "Invalid value for inline_max_bytes: must be between 0 and 1048576")
	_, err = docs.SetContentSources(ctx, &documentv1.SetContentSourcesRequest{Sources: []*documentv1.SetContentSourceRequest{
		{DocId: a.DocID, FileId: current, Source: "guess"}}})
	wantGRPC(t, err, codes.InvalidArgument, "Invalid value for source: must be text, ocr or none")
	public, pctx := documentClient(t, owner.client)
	_, err = public.GetIndexDocuments(pctx, &documentv1.GetIndexDocumentsRequest{DocIds: ids})
	wantGRPC(t, err, codes.PermissionDenied, "Missing required scope: internal")
	_, err = public.SetContentSources(pctx, &documentv1.SetContentSourcesRequest{})
	wantGRPC(t, err, codes.PermissionDenied, "Missing required scope: internal")
}

// TestDocNumbersUnderConcurrency uploads 200 documents with one prefix at
// once: they get 200 distinct, consecutive numbers.
func TestDocNumbersUnderConcurrency(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	prefix := fmt.Sprintf("C%d", userSeq.Add(1)) + uniq("")[1:7]
	const n = 200
	numbers := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 32)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			body := multipartParts(t, field("folder_id", strconv.FormatInt(u.folder.FolderID, 10)),
				field("doc_number_prefix", prefix), filePart(fmt.Sprintf("n%d.txt", i), []byte(fmt.Sprint(i))))
			r := doRequest(t, u.token, "POST", "/apiv2/pub/documents/upload", body)
			if r.Status != 200 {
				errs <- fmt.Errorf("upload %d: %d %s", i, r.Status, r.Body)
				return
			}
			var res uploadResult
			r.JSON(t, &res)
			if res.DocNumber == nil {
				errs <- fmt.Errorf("upload %d: no doc_number in %s", i, r.Body)
				return
			}
			numbers[i] = *res.DocNumber
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	slices.Sort(numbers)
	for i, got := range numbers {
		if want := fmt.Sprintf("%s-%05d", prefix, i+1); got != want {
			t.Fatalf("numbers[%d] = %q, want %q (all: %v)", i, got, want, numbers)
		}
	}
	// Another prefix has its own sequence; no prefix means no number.
	other := u.uploadFile("o.txt", []byte("o"), field("doc_number_prefix", prefix+"-B"))
	if other.DocNumber == nil || *other.DocNumber != prefix+"-B-00001" {
		t.Fatalf("other prefix number = %v", other.DocNumber)
	}
	if d := u.getDoc(other.DocID, ""); !eqp(d.DocNumber, prefix+"-B-00001") {
		t.Fatalf("document doc_number = %v", d.DocNumber)
	}
	if none := u.uploadFile("none.txt", []byte("x")); none.DocNumber != nil {
		t.Fatalf("doc_number without a prefix = %q", *none.DocNumber)
	}
}

// TestFolderDeletionUnassignsDocuments: deleting a folder unassigns its
// documents at once for readers (the folder is gone from include=folders,
// and an upload into it is refused), and as a document change (rev bumped
// once, a folders_changed event) before the DELETE answers: the folder
// service tells the document service (FoldersDeleted) rather than leave
// it to the deleted event. The document itself stays.
func TestFolderDeletionUnassignsDocuments(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	sub := u.createFolder(uniq("Sub"), u.folder.FolderID)
	res := u.upload(field("folder_id", strconv.FormatInt(sub.FolderID, 10)), filePart("in-sub.txt", uniqText(t, 100)))
	expect(t, res, 200)
	var up uploadResult
	res.JSON(t, &up)
	if d := u.getDoc(up.DocID, "folders"); len(d.Folders) != 1 || d.Folders[0].FolderID != sub.FolderID ||
		d.Folders[0].FullPath != u.folder.Name+"->"+sub.Name || d.Folders[0].ParentID != u.folder.FolderID {
		t.Fatalf("folders = %+v", d.Folders)
	}
	rev := docRev(t, up.DocID)
	// Deleting the parent deletes the subtree, and with it the assignment.
	expect(t, u.do("DELETE", fmt.Sprintf("/apiv2/pub/folders/%d", u.folder.FolderID), nil), 200)
	// Already a document change: the FoldersDeleted call came before the
	// answer (the event may have too, but cannot be relied on under load).
	if got := docRev(t, up.DocID); got != rev+1 {
		t.Fatalf("rev right after the DELETE = %d, want %d (was the document service told?)", got, rev+1)
	}
	d := u.getDoc(up.DocID, "folders")
	if d.Folders == nil || len(d.Folders) != 0 {
		t.Fatalf("folders after deletion = %+v", d.Folders)
	}
	expect(t, u.upload(field("folder_id", strconv.FormatInt(sub.FolderID, 10)), filePart("late.txt", uniqText(t, 40))),
		404, "Folder not found")
	eventually(t, 15*time.Second, func() error {
		if got := docRev(t, up.DocID); got != rev+1 {
			return fmt.Errorf("rev = %d, want %d", got, rev+1)
		}
		return nil
	})
	ev := docEvents(t, up.DocID)
	if len(ev) != 2 || ev[1] != (outboxEvent{"folders_changed", rev + 1}) {
		t.Fatalf("events = %+v", ev)
	}
	// The document and its file are intact.
	expect(t, u.do("GET", downloadPath(up.DocID, ""), nil), 200)
}

// TestInvalidDocIDs: ids that are not positive integers are a 400 on every
// document route (docs/api.md §4.4: "400 invalid docID").
func TestInvalidDocIDs(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	for _, id := range []string{"0", "-5", "abc", "1.5", "99999999999999999999"} {
		routes := []struct {
			method, path string
			body         any
		}{
			{"GET", "/apiv2/pub/documents/" + id, nil},
			{"GET", "/apiv3/pub/documents/" + id + "/versions", nil},
			{"GET", "/apiv2/pub/documents/" + id + "/download", nil},
			{"PATCH", "/apiv3/pub/documents/" + id, map[string]any{"description": "x"}},
			{"POST", "/apiv3/pub/documents/" + id + "/lock", nil},
			{"POST", "/apiv3/pub/documents/" + id + "/unlock", nil},
			{"POST", "/apiv3/pub/documents/" + id + "/versions", multipartParts(t, filePart("x.txt", []byte("x")))},
			{"PUT", "/apiv3/pub/documents/" + id + "/customfields/1", map[string]any{"rows": []any{}}},
		}
		for _, rt := range routes {
			t.Run(rt.method+" "+rt.path, func(t *testing.T) {
				r := u.do(rt.method, rt.path, rt.body)
				if id == "0" || id == "-5" {
					expect(t, r, 400, "Invalid value for doc_id: must be a positive integer")
				} else {
					expect(t, r, 400)
				}
			})
		}
	}
}

// TestServiceScopesStopAtTheEdge: internal (every document regardless of
// groups) and admin belong to service credentials only. An API key cannot
// hold them, not even by hand-written SQL; a service credential works over
// gRPC, and the REST API refuses it with a 403 (and does not count what it
// would see).
func TestServiceScopesStopAtTheEdge(t *testing.T) {
	t.Parallel()
	owner := newDocUser(t)
	word := uniq("edgeword")
	res := owner.uploadFile("edge.txt", []byte("a note about "+word))
	path := fmt.Sprintf("/apiv2/pub/documents/%d", res.DocID)

	for _, scope := range []string{auth.ScopeInternal, auth.ScopeAdmin} {
		_, _, err := stk.identity.CreateKey(context.Background(), owner.username, []string{auth.ScopeDocumentsRead, scope}, 0)
		if err == nil || !strings.Contains(err.Error(), "service credentials") {
			t.Fatalf("API key with %s: err = %v, want a refusal naming service credentials", scope, err)
		}
		_, err = stk.pool.Exec(context.Background(), `UPDATE identity.api_keys SET scopes = scopes || $2::text WHERE id = $1`, owner.keyID, scope)
		if err == nil || !strings.Contains(err.Error(), "api_keys_user_scopes_only") {
			t.Fatalf("SQL giving %s to an API key: err = %v, want the check constraint", scope, err)
		}
	}

	svc := newService(t, auth.ScopeInternal, auth.ScopeAdmin)
	expect(t, svc.do("GET", path, nil), 403, "Service credentials are not accepted by the REST API; use an API key")
	query := map[string]any{"where": map[string]any{"fts": map[string]any{"query": word}}}
	eventually(t, 10*time.Second, func() error {
		var r struct{ Total int }
		owner.do("POST", "/apiv2/pub/search", query).JSON(t, &r)
		if r.Total != 1 {
			return fmt.Errorf("the owner's search finds %d, want 1 (not indexed yet)", r.Total)
		}
		return nil
	})
	expect(t, svc.do("POST", "/apiv2/pub/search", query), 403, "Service credentials are not accepted by the REST API; use an API key")

	docs, ctx := documentClient(t, svc)
	got, err := docs.GetIndexDocument(ctx, &documentv1.GetIndexDocumentRequest{DocId: res.DocID})
	if err != nil || got.GetDocument().GetDocument().GetId() != res.DocID {
		t.Fatalf("direct gRPC with the service credential: %v, %v; want the document", got, err)
	}
}
