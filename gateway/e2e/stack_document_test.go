package e2e

import (
	"context"
	"fmt"
	"path/filepath"
)

// docMaxUpload is the upload limit of the stack's document service; the
// gateway's (stack_test.go) is the same.
const docMaxUpload = 64 << 20

// blobDir is the blob directory of the stack's document service, so that
// tests can check what is stored.
var blobDir string

func init() {
	registry["document"] = func(ctx context.Context, env serviceEnv) ([]string, error) {
		blobDir = filepath.Join(env.tempDir, "blobs")
		return []string{
			"DOCREPO_BLOB_DIR=" + blobDir,
			fmt.Sprintf("DOCREPO_MAX_UPLOAD_BYTES=%d", docMaxUpload),
		}, nil
	}
}
