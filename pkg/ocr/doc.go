// Package ocr reads the text of scanned pages and images with Tesseract, for
// the indexer (docs/design.md §8). It implements extract.OCR: pkg/extract
// decides which pages need OCR (PDF pages without a usable text layer,
// image files), checks their size against the pixel limit and merges the
// text page by page; this package renders and reads those pages in a
// bounded pool.
//
// # How a page is read
//
// A PDF page is rendered with poppler's pdftoppm (-gray, PGM: no compression
// to spend time on) at the resolution extract chose (300 dpi, or a scan's
// own resolution when lower, not below 200), then read by the tesseract
// program with --dpi set (PGM carries no resolution, and Tesseract then
// assumes 70 dpi and reads less). Images (PNG, JPEG, TIFF, WebP, GIF, BMP)
// go to tesseract as they are; each page of a multi-page TIFF is read on
// its own (tessedit_page_number), so the page time limit applies to every
// page. Page segmentation mode 1 (automatic, with orientation and script
// detection) is the default (Config.OSD): it reads upside-down scans.
// Every process runs with OMP_THREAD_LIMIT=1 and nice 10, and output is
// capped, so a page costs one core at low priority and a bounded amount of
// memory.
//
// # The pool
//
// Engine runs Config.Workers workers (default half the CPUs, at least one:
// the other half stays with searches). Documents queue their pages; the
// workers take pages from the queued documents in turn, so a one-page scan
// submitted behind a 300-page one waits for at most one page per worker,
// not for the whole book. A page gets Config.PageTimeout (rendering and
// reading; the process is killed past it), a document Config.DocTimeout
// including its time in the queue. The indexer's OCR stage reads Config.Documents
// documents at once (Documents), taking them from its durable job queue
// (pkg/ocrjobs). Status
// and the docrepo_ocr_* metrics show documents and pages queued and in
// progress; docrepoctl ocr status prints them.
//
// # Why the tesseract program, and why pdftoppm (measured)
//
// On the 2-core development machine, 8 pages of four real documents
// rasterised at 300 dpi, one page at a time on one thread:
//
//	                                   s/page  word recall  memory
//	tesseract CLI, one process a page   1.43     0.934      58-104 MiB per process, freed at exit
//	gosseract (cgo, libtesseract)       1.17     0.875      143-176 MiB resident in the calling process
//	tesseract CLI without --dpi         1.44     0.913
//	tesseract CLI at 200 dpi            1.13     0.927
//
// (word recall: the share of pdftotext's words of the original page, as a
// multiset, that OCR produced.) In-process Tesseract saves about 0.25 s a
// page (process start and model load) and nothing else: gosseract gives no
// way to pass the resolution, and read less; a cgo call cannot be
// cancelled, so a page time limit could not stop a runaway page; a crash in
// Tesseract or Leptonica on a hostile image would take the search process
// (which runs the indexer in embedded mode) with it, and the model's memory
// would stay resident there; and cgo would end the static, distroless
// builds of the search and indexer binaries. The program keeps the binaries
// pure Go, kills a page at its limit, isolates crashes and returns its
// memory at exit, for about 20% more time per page.
//
// Page images: pdfcpu can extract a page's image XObject, which would save
// the rendering (pdftoppm takes 0.06-0.2 s of the 1.1-1.5 s a page costs).
// pdftoppm is used for every page because it is always right: it applies
// the page's rotation, crop box and the image's placement and decode
// arrays, composes several images and vector text (outlined fonts need OCR
// too), and decodes JBIG2 and CCITT scans, which Tesseract cannot read.
// The scan's own resolution is kept by rendering at it.
//
// Orientation and skew: with mode 1, a page rotated by 180° is read (word
// recall 0.970 against 0.029 with mode 3), at 0.17-0.3 s more a page; 90°
// is read in both modes. Tesseract tolerates a skew of 1° (recall 0.988)
// but not 3° (0.313), and has no deskewing of its own in the program, so
// rendered PDF pages are straightened here first (deskew.go): the skew is
// the angle within ±6° whose horizontal projection of the dark pixels is
// sharpest (text lines line up), measured on the page reduced to 1000
// pixels wide; at 0.6° or more, and only when it sharpens the profile
// clearly, the page is turned back. On the four 3°-skewed pages, recall
// rises from 0.313 to 0.968 (0.902-0.998); straight pages are left as they
// are, at 20-105 ms a page (220-320 ms when one is turned). Image uploads
// go to Tesseract as they are (not deskewed).
//
// # Cost and interference (BenchmarkOCRPages, indexing's
// BenchmarkOCRWhileSearching)
//
// 1.56-2.15 s a page on one core at 300 dpi with orientation detection
// (the shared machine's speed varied between runs), 1.8-2.1 times that
// throughput with two workers in the same run; one tesseract process
// peaks at 104 MiB, pdftoppm at about 30 MiB. In embedded mode, with
// searches arriving at 50 a second, a 10-page scan is searchable after
// 16-20 s while the FTS p95 during OCR stays at 0.93-1.21 of its value
// before and after (0.87-1.09 before deskewing was added; 1.28 once while
// the skew check ran at the service's priority, which is why it now runs
// on a thread of its own at the OCR priority); a client searching back to
// back (a saturated core) sees 1.32.
//
// # Accuracy on real scans
//
// The evidence run (TestOCRRecallFindsNinetyPercentOfTextPhrasesInScans, DOCREPO_OCR_RECALL=1; docs/benchmarks.md §4)
// rasterises every PDF of the shared real documents at 300 dpi into
// image-only PDFs, and the smaller ones into TIFF and PNG files: 25 of the
// 26 manifest phrases are found by phrase search in the scans (96%; the
// miss is a phrase in a diagram of RA_CI.pdf whose side-by-side boxes OCR
// reads across, "GitHub webhook - Dockerfile / triggers Jenkins"), against 26 in the
// text versions, and the OCR text has 97.9% of pdftotext's words
// (precision 96.2%) over 159 pages. At 200 dpi: 24 phrases (92%; small
// print in a JPEG-compressed page is lost), word recall 98.1%, 35% less
// time; 300 dpi is the default.
package ocr
