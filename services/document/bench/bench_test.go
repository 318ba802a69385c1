// Package bench measures the document service's upload path end to end:
// a large file streamed through the real gateway and document service, each
// its own process, compared with writing the same bytes straight into the
// blob store, plus the peak memory (VmHWM) of both processes.
//
// It runs only when asked:
//
//	go test ./services/document/bench -run '^$' -bench Upload -benchtime 1x -v
//
// DOCREPO_BENCH_BYTES sets the file size (default 1 GiB); DOCREPO_BENCH_DIR
// the directory under which both stores write (default: the test's temporary
// directory; /dev/shm takes the disk out of the measurement). The binaries
// are built from the workspace first, and the database is a fresh pgtest one.
package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/blob/diskstore"
	"github.com/docrepo/docrepo/pkg/client"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/launcher"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// patternReader yields size bytes repeating one random block: cheap to
// produce, so the client is not the bottleneck, and not compressible by
// anything on the way.
type patternReader struct {
	block []byte
	size  int64
	off   int64
}

func newPattern(b testing.TB, size int64) *patternReader {
	block := make([]byte, 4<<20+13) // an odd length: chunks never align with it
	if _, err := rand.Read(block); err != nil {
		b.Fatal(err)
	}
	return &patternReader{block: block, size: size}
}

func (p *patternReader) Read(buf []byte) (int, error) {
	if p.off >= p.size {
		return 0, io.EOF
	}
	n := 0
	for n < len(buf) && p.off < p.size {
		i := p.off % int64(len(p.block))
		k := copy(buf[n:], p.block[i:min(int64(len(p.block)), i+p.size-p.off)])
		n += k
		p.off += int64(k)
	}
	return n, nil
}

func (p *patternReader) reset() { p.off = 0 }

// proc is a started service process.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *bytes.Buffer
}

// syscalls reads the process's read and write system call counts
// (/proc/<pid>/io syscr and syscw).
func (p *proc) syscalls(b testing.TB) (reads, writes int64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", p.cmd.Process.Pid))
	if err != nil {
		b.Fatalf("%s: %v", p.name, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "syscr":
			reads = n
		case "syscw":
			writes = n
		}
	}
	return reads, writes
}

// memory reads VmHWM (peak resident set) and VmRSS of the process in KiB.
func (p *proc) memory(b testing.TB) (hwm, rss int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		b.Fatalf("%s: %v", p.name, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmHWM:":
			hwm = v
		case "VmRSS:":
			rss = v
		}
	}
	return hwm, rss
}

// cpu reads the process's user+system CPU time from /proc/<pid>/stat.
func (p *proc) cpu(b testing.TB) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		b.Fatalf("%s: %v", p.name, err)
	}
	// Fields after the command name (which may hold spaces) start after ")".
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ is 100 on Linux
}

type syncBuffer struct {
	mu sync.Mutex
	bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Buffer.Write(p)
}

func start(b testing.TB, bin, name string, env []string, args ...string) *proc {
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.Env = append(os.Environ(), env...)
	if base := os.Getenv("DOCREPO_BENCH_PPROF"); base != "" {
		// DOCREPO_BENCH_PPROF=PORT: each process serves pprof on a port of
		// its own from PORT on (folder, schema, document, gateway).
		port, err := strconv.Atoi(base)
		if err != nil {
			b.Fatalf("DOCREPO_BENCH_PPROF=%q: want a port number", base)
		}
		off := map[string]int{"folder": 0, "schema": 1, "document": 2, "gateway": 3}[name]
		cmd.Env = append(cmd.Env, fmt.Sprintf("DOCREPO_PPROF_ADDR=127.0.0.1:%d", port+off))
	}
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		b.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: &logs.Buffer}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if b.Failed() {
			logs.mu.Lock()
			b.Logf("%s output:\n%s", name, logs.String())
			logs.mu.Unlock()
		}
	})
	return p
}

// BenchmarkUpload streams a file through gateway → document service → disk
// blob store and compares it with a direct blob store write.
func BenchmarkUpload(b *testing.B) {
	size := int64(1 << 30)
	if v := os.Getenv("DOCREPO_BENCH_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("DOCREPO_BENCH_BYTES=%q", v)
		}
		size = n
	}
	ctx := context.Background()
	root, err := launcher.RepoRoot(".")
	if err != nil {
		b.Fatal(err)
	}
	bin := b.TempDir()
	buildStart := time.Now()
	build := exec.Command("go", "build", "-o", bin+"/", "./gateway", "./services/folder", "./services/schema", "./services/document")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	b.Logf("built the binaries in %v", time.Since(buildStart).Round(time.Second))

	// The identity tables hold the bench's key; each service migrates its
	// own tables when it starts.
	dbURL := pgtest.NewDatabase(b, identity.Migrations)
	pool, err := database.Open(ctx, dbURL, "")
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	ids := identity.NewStore(pool)
	if _, err := ids.CreateUser(ctx, "bench", []string{"bench"}); err != nil {
		b.Fatal(err)
	}
	token, _, err := ids.CreateKey(ctx, "bench", []string{"documents_read", "documents_write"}, 0)
	if err != nil {
		b.Fatal(err)
	}

	dataDir := b.TempDir()
	if d := os.Getenv("DOCREPO_BENCH_DIR"); d != "" {
		var err error
		if dataDir, err = os.MkdirTemp(d, "docrepo-bench-"); err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(dataDir)
	}
	blobDir := filepath.Join(dataDir, "blobs")
	// Ports below the kernel's range for outgoing connections, which one
	// could take before a child binds its port.
	var addrs [4]string
	for i := range addrs {
		if addrs[i], err = launcher.FreeAddr(); err != nil {
			b.Fatal(err)
		}
	}
	folderAddr, schemaAddr, docAddr, httpAddr := addrs[0], addrs[1], addrs[2], addrs[3]
	maxBytes := strconv.FormatInt(size+1<<20, 10)
	common := []string{"DATABASE_URL=" + dbURL, "DOCREPO_MIGRATE=true", "NATS_URL=", "DOCREPO_LOG_LEVEL=warn",
		"DOCREPO_FOLDER_ADDR=" + folderAddr, "DOCREPO_SCHEMA_ADDR=" + schemaAddr, "DOCREPO_DOCUMENT_ADDR=" + docAddr,
		"DOCREPO_MAX_UPLOAD_BYTES=" + maxBytes, "OTEL_SDK_DISABLED=true"}
	start(b, bin, "folder", append(common, "DOCREPO_GRPC_ADDR="+folderAddr), "-http-addr=")
	start(b, bin, "schema", append(common, "DOCREPO_GRPC_ADDR="+schemaAddr), "-http-addr=")
	doc := start(b, bin, "document", append(common, "DOCREPO_GRPC_ADDR="+docAddr, "DOCREPO_BLOB_DIR="+blobDir), "-http-addr=", "-nats-url=")
	gw := start(b, bin, "gateway", append(common, "DOCREPO_HTTP_ADDR="+httpAddr))
	base := "http://" + httpAddr

	api, err := client.New(base, token, client.Options{Retry: client.NoRetry})
	if err != nil {
		b.Fatal(err)
	}
	// Wait for the stack, then create the target folder.
	var folder *client.Folder
	deadline := time.Now().Add(60 * time.Second)
	for {
		if folder, err = api.CreateFolder(ctx, "bench", 0); err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("stack not ready: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	gwBase, _ := gw.memory(b)
	docBase, _ := doc.memory(b)

	data := newPattern(b, size)
	// Direct: the same bytes into a disk store on the same file system,
	// hashed on the way as the service hashes them. Disk speed varies a
	// lot on shared machines, so this runs before and after the upload.
	direct, err := diskstore.New(filepath.Join(filepath.Dir(blobDir), "direct"))
	if err != nil {
		b.Fatal(err)
	}
	var want string
	directWrite := func() time.Duration {
		data.reset()
		h := sha256.New()
		t0 := time.Now()
		if _, err := direct.Put(ctx, "direct/one", io.TeeReader(data, h)); err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		want = hex.EncodeToString(h.Sum(nil))
		_ = direct.Delete(ctx, "direct/one")
		return d
	}
	directBefore := directWrite()

	// Through the gateway: a streamed multipart body, never in memory.
	var peakGW, peakDoc int64
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		data.reset()
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() { // sample RSS while the upload runs
			defer close(sampled)
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
					_, g := gw.memory(b)
					_, d := doc.memory(b)
					peakGW, peakDoc = max(peakGW, g), max(peakDoc, d)
				}
			}
		}()
		gwCPU0, docCPU0 := gw.cpu(b), doc.cpu(b)
		gwR0, gwW0 := gw.syscalls(b)
		docR0, docW0 := doc.syscalls(b)
		t1 := time.Now()
		upload, err := api.Upload(ctx, client.Upload{FolderID: folder.FolderID, File: data, Filename: "big.bin"})
		elapsed := time.Since(t1)
		close(stop)
		<-sampled
		if err != nil {
			b.Fatalf("upload: %v", err)
		}
		b.StopTimer()
		gwCPU, docCPU := gw.cpu(b)-gwCPU0, doc.cpu(b)-docCPU0
		gwR, gwW := gw.syscalls(b)
		docR, docW := doc.syscalls(b)
		b.Logf("system calls: gateway %d reads, %d writes; document %d reads, %d writes", gwR-gwR0, gwW-gwW0, docR-docR0, docW-docW0)
		gwHWM, _ := gw.memory(b)
		docHWM, _ := doc.memory(b)
		d, err := api.GetDocument(ctx, upload.DocID)
		if err != nil || len(d.LinkedFiles) != 1 || d.LinkedFiles[0].Filehash != want {
			b.Fatalf("stored file's hash is not the direct write's %s: %+v %v", want, d, err)
		}
		// Download it back through the gateway, hashing what arrives.
		gwCPU0, docCPU0 = gw.cpu(b), doc.cpu(b)
		t2 := time.Now()
		dl, err := api.Download(ctx, upload.DocID, client.DownloadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		h := sha256.New()
		got, err := io.Copy(h, dl.Body)
		dl.Body.Close()
		down := time.Since(t2)
		if err != nil || got != size || hex.EncodeToString(h.Sum(nil)) != want {
			b.Fatalf("download: %d bytes, %v; hash matches: %v", got, err, hex.EncodeToString(h.Sum(nil)) == want)
		}
		gwDownCPU, docDownCPU := gw.cpu(b)-gwCPU0, doc.cpu(b)-docCPU0
		directAfter := directWrite()
		directTime := (directBefore + directAfter) / 2
		gwMBs := float64(size) / elapsed.Seconds() / 1e6
		directMBs := float64(size) / directTime.Seconds() / 1e6
		gib := float64(size) / (1 << 30)
		b.ReportMetric(gwMBs, "gateway-MB/s")
		b.ReportMetric(directMBs, "direct-MB/s")
		b.ReportMetric(float64(gwHWM)/1024, "gateway-VmHWM-MiB")
		b.ReportMetric(float64(docHWM)/1024, "document-VmHWM-MiB")
		b.ReportMetric(gwCPU.Seconds()/gib, "gateway-cpu-s/GiB")
		b.ReportMetric(docCPU.Seconds()/gib, "document-cpu-s/GiB")
		b.Logf("%d bytes: through the gateway %v (%.0f MB/s); straight into the blob store %v before, %v after (mean %.0f MB/s); ratio %.2f",
			size, elapsed.Round(time.Millisecond), gwMBs, directBefore.Round(time.Millisecond), directAfter.Round(time.Millisecond),
			directMBs, gwMBs/directMBs)
		b.Logf("CPU: gateway %v, document %v", gwCPU, docCPU)
		b.Logf("download through the gateway %v (%.0f MB/s); CPU: gateway %v, document %v",
			down.Round(time.Millisecond), float64(size)/down.Seconds()/1e6, gwDownCPU, docDownCPU)
		b.ReportMetric(float64(size)/down.Seconds()/1e6, "download-MB/s")
		b.ReportMetric((gwDownCPU+docDownCPU).Seconds()/gib, "download-cpu-s/GiB")
		b.Logf("VmHWM gateway %d KiB (%d KiB before the upload, sampled VmRSS peak %d KiB); document %d KiB (%d KiB before, sampled peak %d KiB)",
			gwHWM, gwBase, peakGW, docHWM, docBase, peakDoc)
		_, _ = pool.Exec(ctx, `DELETE FROM documents WHERE id = $1`, upload.DocID)
		_ = os.RemoveAll(blobDir + "/files")
		b.StartTimer()
	}
}
