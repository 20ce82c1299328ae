# hactl — see README.md.
SHELL := /usr/bin/env bash
VERSION ?= v0.1.0
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
PKG      = github.com/hactl-dev/hactl/internal/buildinfo
LDFLAGS  = -X $(PKG).Version=$(VERSION) -X $(PKG).Commit=$(COMMIT) -X $(PKG).Date=$(DATE)
GOTEST_FLAGS ?= -count=1 -timeout 40m

.PHONY: all build test testbins lint dist demo bench clean

all: build

## build: bin/kubectl-hactl and its completion helper
build:
	@mkdir -p bin
	go build -trimpath -ldflags "$(LDFLAGS)" -o bin/kubectl-hactl ./cmd/kubectl-hactl
	@if [ -d cmd/hactl-sandbox ]; then go build -trimpath -o bin/hactl-sandbox ./cmd/hactl-sandbox; fi
	cp kubectl_complete-hactl bin/

## testbins: build the pinned real components the tests run (cached)
testbins:
	bash hack/testbins.sh >/dev/null

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
	VERSION=$(VERSION) COMMIT=$(COMMIT) DATE=$(DATE) bash hack/dist.sh

## demo: a local sandbox with several HA clusters, then the live view
demo: build testbins
	bash hack/demo.sh

## bench: benchmarks with ratios against baselines
bench: testbins
	bash hack/bench.sh

clean:
	rm -rf bin dist
