# hactl — see README.md.
SHELL := /usr/bin/env bash
VERSION ?= v0.1.0
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
PKG      = github.com/hactl-dev/hactl/internal/buildinfo
LDFLAGS  = -s -w -X $(PKG).Version=$(VERSION) -X $(PKG).Commit=$(COMMIT) -X $(PKG).Date=$(DATE)
# Release flags: a static binary (no cgo), without gRPC's /debug/requests
# tracing (grpcnotrace), stripped (-s -w). docs/size.md says why.
BUILDFLAGS = -trimpath -buildvcs=false -tags grpcnotrace
# hactl-capture, the agent image's capture binary, also leaves out the
# gs:// and azblob:// drivers (agent.CaptureBuildTags).
CAPTURE_BUILDFLAGS = -trimpath -buildvcs=false -tags grpcnotrace,hactl_s3only
GOTEST_FLAGS ?= -count=1 -timeout 40m

.PHONY: all build test testbins lint dist manifest image demo bench clean

all: build

## build: bin/kubectl-hactl, its completion helper and bin/hactl-capture (the agent image's capture binary)
build:
	@mkdir -p bin
	CGO_ENABLED=0 go build $(BUILDFLAGS) -ldflags "$(LDFLAGS)" -o bin/kubectl-hactl ./cmd/kubectl-hactl
	CGO_ENABLED=0 go build $(CAPTURE_BUILDFLAGS) -ldflags "$(LDFLAGS)" -o bin/hactl-capture ./cmd/hactl-capture
	@if [ -d cmd/hactl-sandbox ]; then go build -trimpath -o bin/hactl-sandbox ./cmd/hactl-sandbox; fi
	cp kubectl_complete-hactl bin/

## testbins: build the pinned real components the tests run (cached), and
## install Debian's Patroni and PostgreSQL 15 for the Patroni members
testbins:
	bash hack/testbins.sh >/dev/null
	bash hack/patroni.sh >/dev/null

## lint: gofmt and go vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...

## test: every tier (pure, real control plane, real members, end to end)
test: testbins lint build
	HACTL_TESTBINS_DIR=$$(bash hack/testbins.sh) go test $(GOTEST_FLAGS) ./...

## dist: cross-built archives and the krew manifest in dist/
dist:
	VERSION=$(VERSION) bash hack/dist.sh

## manifest: rewrite the top-level plugin.yaml from a fresh `make dist`
manifest: dist
	cp dist/plugin.yaml plugin.yaml

# The agent image restore and capture pods run (actions.DefaultAgentImage). With
# SOURCE_DATE_EPOCH set, the binary's build date is that time too, so the
# same commit gives the same image digest.
IMAGE_PLATFORM ?= linux/amd64
IMAGE_REPO     ?= ghcr.io/hactl-dev/hactl
image: DATE := $(if $(SOURCE_DATE_EPOCH),$(shell date -u -d @$(SOURCE_DATE_EPOCH) +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u -r $(SOURCE_DATE_EPOCH) +%Y-%m-%dT%H:%M:%SZ),$(DATE))

## image: the agent image without a Docker engine: dist/image/ (OCI layout), dist/hactl-image.tar
# It holds bin/kubectl-hactl and bin/hactl-capture as `make build` makes
# them (cross-built with the same flags when IMAGE_PLATFORM is not this
# machine's).
HOST_PLATFORM := $(shell go env GOOS)/$(shell go env GOARCH)
image: build
	@mkdir -p dist/image-build
	@if [ "$(IMAGE_PLATFORM)" = "$(HOST_PLATFORM)" ]; then cp bin/kubectl-hactl bin/hactl-capture dist/image-build/; else \
	  export CGO_ENABLED=0 GOOS=$(word 1,$(subst /, ,$(IMAGE_PLATFORM))) GOARCH=$(word 2,$(subst /, ,$(IMAGE_PLATFORM))) && \
	  go build $(BUILDFLAGS) -ldflags "$(LDFLAGS)" -o dist/image-build/kubectl-hactl ./cmd/kubectl-hactl && \
	  go build $(CAPTURE_BUILDFLAGS) -ldflags "$(LDFLAGS)" -o dist/image-build/hactl-capture ./cmd/hactl-capture; fi
	go run ./hack/image --binary dist/image-build/kubectl-hactl --capture-binary dist/image-build/hactl-capture --platform $(IMAGE_PLATFORM) \
	  --version $(VERSION) --commit $(COMMIT) --repo $(IMAGE_REPO) \
	  --out dist/image --tarball dist/hactl-image.tar

## demo: a local sandbox with several HA clusters, then the live view
demo: build testbins
	bash hack/demo.sh

## bench: benchmarks with ratios against baselines
bench: testbins
	bash hack/bench.sh

clean:
	rm -rf bin dist
