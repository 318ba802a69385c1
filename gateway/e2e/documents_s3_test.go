package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/docrepo/docrepo/pkg/testenv"
	"github.com/docrepo/docrepo/pkg/testenv/miniotest"
)

// s3Stack is a second document service on a real MinIO bucket behind its
// own gateway; folders and doc types come from the shared stack. Both
// enforce an upload limit of 1 MiB.
type s3Stack struct {
	baseURL string
	// s3 and bucket are the MinIO server and the bucket the service
	// stores files in.
	s3     *minio.Client
	bucket string
}

const s3MaxUpload = 1 << 20

func startS3Stack(t *testing.T) *s3Stack {
	t.Helper()
	srv := miniotest.Start(t)
	bucket := srv.BucketName(t)
	s3, err := minio.New(srv.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(srv.AccessKey, srv.SecretKey, ""), Region: srv.Region})
	if err != nil {
		t.Fatal(err)
	}
	st := &s3Stack{s3: s3, bucket: bucket}
	v := startVariant(t, []string{"document", "gateway"},
		"MINIO_ENDPOINT="+srv.Endpoint, "MINIO_ACCESS_KEY="+srv.AccessKey, "MINIO_SECRET_KEY="+srv.SecretKey,
		"MINIO_BUCKET="+bucket, fmt.Sprintf("DOCREPO_MAX_UPLOAD_BYTES=%d", s3MaxUpload))
	st.baseURL = v.URL()
	return st
}

// do sends a request to the S3 stack's gateway as c (contentLength -1:
// chunked).
func (s *s3Stack) do(t *testing.T, c *client, method, path string, body io.Reader, contentType string, contentLength int64) *response {
	t.Helper()
	var headers []string
	if contentType != "" {
		headers = []string{"Content-Type", contentType}
	}
	if body == nil {
		return doRequestTo(t, s.baseURL, c.token, method, path, nil, headers...)
	}
	return doRequestTo(t, s.baseURL, c.token, method, path, sizedBody{Reader: body, size: contentLength}, headers...)
}

func (s *s3Stack) upload(t *testing.T, c *client, parts ...formPart) *response {
	t.Helper()
	p := multipartParts(t, parts...)
	return s.do(t, c, "POST", "/apiv2/pub/documents/upload", p, p.contentType, int64(p.Len()))
}

// TestDocumentsOnMinIO runs the document service on a real MinIO bucket
// behind a real gateway: uploads (metadata before and after the file),
// byte-exact downloads and ranges, versions, PDF page counts read back from
// S3, the size limit at exactly its edge, and refusals after the bytes,
// which must leave nothing in the bucket.
func TestDocumentsOnMinIO(t *testing.T) {
	t.Parallel()
	s := startS3Stack(t)
	u := newDocUser(t)
	folderID := strconv.FormatInt(u.folder.FolderID, 10)
	get := func(id int64) document {
		t.Helper()
		r := s.do(t, u.client, "GET", fmt.Sprintf("/apiv2/pub/documents/%d?include=versions,folders", id), nil, "", 0)
		expect(t, r, 200)
		var d document
		r.JSON(t, &d)
		return d
	}

	// Upload with metadata before and after the file, then download.
	v1 := randomBytes(t, 700_000)
	r := s.upload(t, u.client, field("folder_id", folderID), field("description", "On S3"), filePart("data.bin", v1))
	expect(t, r, 200)
	var res uploadResult
	r.JSON(t, &res)
	r = s.upload(t, u.client, filePart("after.txt", uniqText(t, 3000)), field("folder_id", folderID), field("doc_status", "late"))
	expect(t, r, 200)
	var after uploadResult
	r.JSON(t, &after)
	if d := get(after.DocID); !eqp(d.DocStatus, "late") || len(d.Folders) != 1 {
		t.Fatalf("metadata after the file: %+v", d)
	}
	d := get(res.DocID)
	if d.Description != "On S3" || d.LinkedFiles[0].Filehash != sha256Hex(v1) || len(d.Folders) != 1 {
		t.Fatalf("document = %+v", d)
	}
	r = s.do(t, u.client, "GET", downloadPath(res.DocID, ""), nil, "", 0)
	expect(t, r, 200)
	if !bytes.Equal(r.Body, v1) {
		t.Fatal("S3 download differs from the upload")
	}
	r = doRequestTo(t, s.baseURL, u.token, "GET", downloadPath(res.DocID, ""), nil, "Range", "bytes=500000-500099")
	if r.Status != 206 || !bytes.Equal(r.Body, v1[500000:500100]) {
		t.Fatalf("range from S3: %d, %d bytes", r.Status, len(r.Body))
	}

	// A new version archives the old file, which stays downloadable.
	v2 := uniqText(t, 1000)
	p := multipartParts(t, filePart("v2.txt", v2))
	r = s.do(t, u.client, "POST", fmt.Sprintf("/apiv3/pub/documents/%d/versions", res.DocID), p, p.contentType, int64(p.Len()))
	expect(t, r, 200)
	var l versionListing
	r.JSON(t, &l)
	if len(l.History) != 1 || l.History[0].FileHash != sha256Hex(v1) || l.Current.FileHash != sha256Hex(v2) {
		t.Fatalf("versions = %s", r.Body)
	}
	r = s.do(t, u.client, "GET", downloadPath(res.DocID, "archive_id="+strconv.FormatInt(l.History[0].OwnID, 10)), nil, "", 0)
	if r.Status != 200 || !bytes.Equal(r.Body, v1) {
		t.Fatalf("archived download: %d, %d bytes", r.Status, len(r.Body))
	}

	// PDF page counting reads the object back from S3.
	if testenv.RealDocumentsPresent() {
		dir := realDocumentsDir(t)
		pdf, err := os.ReadFile(filepath.Join(dir, "TheGoProgrammingLanguageCh1.pdf"))
		if err != nil {
			t.Fatal(err)
		}
		r = s.upload(t, u.client, field("folder_id", folderID), filePart("gopl.pdf", pdf))
		expect(t, r, 200)
		var pr uploadResult
		r.JSON(t, &pr)
		if f := get(pr.DocID).LinkedFiles[0]; f.PageCount == nil || *f.PageCount != 59 {
			t.Fatalf("page_count from S3 = %v, want 59", f.PageCount)
		}
	} else {
		t.Log("real PDFs absent: page counting on S3 not checked")
	}

	// The size limit: exactly the maximum is accepted, one byte more is
	// refused by the service while streaming (the body is within the
	// gateway's Content-Length allowance), and a body far over the limit
	// is refused by the gateway from its Content-Length alone.
	exact := randomBytes(t, s3MaxUpload)
	expect(t, s.upload(t, u.client, field("folder_id", folderID), filePart("exact.bin", exact)), 200)
	over := randomBytes(t, s3MaxUpload+1)
	expect(t, s.upload(t, u.client, field("folder_id", folderID), filePart("over.bin", over)), 413, "File too large")
	expect(t, s.upload(t, u.client, filePart("over.bin", over), field("folder_id", folderID)), 413, "File too large")
	huge := randomBytes(t, 3*s3MaxUpload)
	expect(t, s.upload(t, u.client, field("folder_id", folderID), filePart("huge.bin", huge)), 413, "File too large")
	// Without a Content-Length (chunked), the service's count decides.
	chunked := multipartParts(t, field("folder_id", folderID), filePart("chunked.bin", over))
	expect(t, s.do(t, u.client, "POST", "/apiv2/pub/documents/upload", io.MultiReader(chunked), chunked.contentType, -1), 413, "File too large")

	// Refusals after the bytes.
	refusals := []struct {
		name   string
		parts  []formPart
		status int
		detail string
	}{
		{name: "unknown folder after the file", parts: []formPart{filePart("x.bin", randomBytes(t, 200_000)), field("folder_id", "999999999")},
			status: 404, detail: "Folder not found"},
		{name: "missing folder_id", parts: []formPart{filePart("x.bin", randomBytes(t, 200_000)), field("description", "no folder")},
			status: 400, detail: "Missing required field: folder_id"},
		{name: "unknown doc_type after the file", parts: []formPart{field("folder_id", folderID), filePart("x.bin", randomBytes(t, 200_000)), field("doc_type", "Nope")},
			status: 422, detail: "Unknown doc_type: Nope"},
	}
	for _, rf := range refusals {
		t.Run(rf.name, func(t *testing.T) {
			expect(t, s.upload(t, u.client, rf.parts...), rf.status, rf.detail)
		})
	}
	p = multipartParts(t, filePart("v.bin", randomBytes(t, 100_000)))
	expect(t, s.do(t, u.client, "POST", "/apiv3/pub/documents/999999999/versions", p, p.contentType, int64(p.Len())), 404, "Document not found")

	// Every object in the bucket is a file of a document, and none is
	// still recorded as pending: refused and replaced uploads left nothing.
	ctx := context.Background()
	objects := 0
	for obj := range s.s3.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		objects++
		var n int
		if err := stk.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM document.linked_files WHERE blob_key = $1) +
			(SELECT count(*) FROM document.file_archive WHERE blob_key = $1)`, obj.Key).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Errorf("unreferenced object %s left in the bucket", obj.Key)
		}
		var pending bool
		if err := stk.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM document.document_pending_blobs WHERE blob_key = $1)`, obj.Key).Scan(&pending); err != nil {
			t.Fatal(err)
		}
		if pending {
			t.Errorf("object %s still has a pending record", obj.Key)
		}
	}
	// Four files at least were stored: two uploads, the second version of
	// the first and the upload of exactly the maximum size (the PDF too
	// when the real documents are present).
	if want := 4; objects < want {
		t.Fatalf("only %d objects in the bucket; expected at least %d", objects, want)
	}
}
