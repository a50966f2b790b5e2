# convoy-apiserver. `make run` starts a local control plane with
# convoy-apiserver registered; `make test` runs every test.

GO        ?= go
BIN_DIR   := bin
LOCAL_DIR ?= $(or $(CONVOY_LOCAL_DIR),.local)
GOTEST_FLAGS ?=

# The build stamp of both binaries (kubectl convoy version, convoy_build_info,
# the OpenAPI info.version of the group): the tag v* of HEAD, else
# v0.0.0-dev+COMMIT; the date is the commit's, in UTC (as Kubernetes writes
# its buildDate, and as the image's label org.opencontainers.image.created
# is), so that builds are repeatable.
GIT_COMMIT ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
VERSION    ?= $(shell git describe --tags --match 'v*' --dirty 2>/dev/null || echo v0.0.0-dev+$(GIT_COMMIT))
BUILD_DATE ?= $(shell TZ=UTC0 git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd 2>/dev/null || echo unknown)
# BUILD_DATE in seconds since the epoch: SOURCE_DATE_EPOCH of a Dockerfile build.
BUILD_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
VERSION_PKG := github.com/kumodo/convoy-apiserver/pkg/version
LDFLAGS    := -X $(VERSION_PKG).gitVersion=$(VERSION) -X $(VERSION_PKG).gitCommit=$(GIT_COMMIT) -X $(VERSION_PKG).buildDate=$(BUILD_DATE)

.PHONY: all build image print-docker-build-args setup modules testbin test test-unit unit-phases test-e2e verify run bench bench-fleet bench-view fuzz clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN_DIR)/convoy-apiserver ./cmd/convoy-apiserver
	$(GO) build -o $(BIN_DIR)/local-up ./hack/local-up
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN_DIR)/kubectl-convoy ./cmd/kubectl-convoy

# The image (docs/operators/image-and-chart.md): REPOSITORY:TAG, the tag being
# the build stamp with "+" (not allowed in a tag) made "-". The chart's
# appVersion and the kustomize base name the tag of a release, which is what
# `make image` writes on the commit tagged with it.
IMAGE        ?= ghcr.io/kumodo/convoy-apiserver
IMAGE_TAG    ?= $(subst +,-,$(VERSION))
IMAGE_SOURCE ?= https://github.com/kumodo/convoy-apiserver
IMAGE_REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# IMAGE_PUSH=REGISTRY/REPOSITORY:TAG pushes the index there too (credentials
# of ~/.docker/config.json).
IMAGE_PUSH   ?=

## image: the OCI image layout of convoy-apiserver for linux/amd64 and
## linux/arm64 at bin/image, built without a container engine (hack/image);
## IMAGE_PUSH=REGISTRY/REPOSITORY:TAG pushes it
image:
	$(GO) run ./hack/image --out $(BIN_DIR)/image --ldflags "$(LDFLAGS)" \
		--repository "$(IMAGE)" --tag "$(IMAGE_TAG)" \
		--source "$(IMAGE_SOURCE)" --revision "$(IMAGE_REVISION)" --version "$(VERSION)" --created "$(BUILD_DATE)" \
		$(if $(IMAGE_PUSH),--push "$(IMAGE_PUSH)")

## print-docker-build-args: the build arguments that give the Dockerfile
## the values make image uses (the stamp, the labels, the times):
##   docker buildx build $(make -s print-docker-build-args) -t REPOSITORY:TAG .
print-docker-build-args:
	@echo --build-arg VERSION=$(VERSION) --build-arg GIT_COMMIT=$(GIT_COMMIT) --build-arg BUILD_DATE=$(BUILD_DATE) \
		--build-arg IMAGE_SOURCE=$(IMAGE_SOURCE) --build-arg IMAGE_REVISION=$(IMAGE_REVISION) \
		--build-arg SOURCE_DATE_EPOCH=$(BUILD_EPOCH)

# Each step of the tests runs as a phase (hack/phase.sh): its start and its
# time are printed; with CONVOY_PHASES_DIR set (.ci/run sets it) its output
# is kept there for hack/phase-report.sh.
PHASE := hack/phase.sh

## testbin: build (once) kube-apiserver, kubectl and etcd into ~/.cache/convoy/testbin
testbin:
	@$(PHASE) testbin sh -c 'hack/testbin.sh >/dev/null'

## modules: download the Go modules of the build and the tests
modules:
	@$(PHASE) modules $(GO) mod download

# The packages that need no control plane.
UNIT_PKGS = $$($(GO) list ./... | grep -v -e /test/e2e -e /internal/controlplane)
# The e2e package's deadline: far above its time, for a loaded machine.
E2E_TIMEOUT ?= 40m
# Tests of the e2e package that run at once (go test -parallel; the default
# is GOMAXPROCS; internal/controlplane has no parallel test). Only the tests
# that work in namespaces of their own are parallel, and Go runs them after
# the others. On a 2-core machine 4 of them keep both cores busy (they wait
# on the API server, but each kubectl they run costs CPU): 6 measured no
# faster (docs/contributors/performance.md), only slower passes towards the
# deadlines of their waits.
E2E_PARALLEL ?= 4

## setup: what the tests need from Debian's packages (git, OpenSSH's server
## and client, Chromium, buildah), installed where missing when run as root
setup:
	@$(PHASE) setup hack/setup.sh

## test: every test, phase by phase, each phase's time printed: the module
## downloads, the unit tests with the race detector and, beside them, the
## control plane's build (once), then its tests and the e2e tests against a
## real etcd and kube-apiserver (hack/test.sh)
test: setup modules
	@GO="$(GO)" GOTEST_FLAGS="$(GOTEST_FLAGS)" UNIT_TIMEOUT="$(UNIT_TIMEOUT)" E2E_TIMEOUT="$(E2E_TIMEOUT)" E2E_PARALLEL="$(E2E_PARALLEL)" hack/test.sh

# The unit tests' deadline per package, for a machine with a cold build
# cache that compiles the other packages beside each.
UNIT_TIMEOUT ?= 30m

## test-unit: unit tests with the race detector; then, without it, the
## Sandbox tests (pkg/sandbox), whose child process (the test binary) must
## not carry the race detector's shadow memory into its RLIMIT_DATA, the
## conformance of charts with Helm's own template action (-tags
## helmconformance: its dependencies are compiled once, not again for the
## race detector), and the tools modules' tests: the PromQL of the alerts
## and the dashboard (hack/tools/promql), the Dockerfile held to make image
## and its final stage built with buildah (hack/tools/dockerfile)
test-unit: setup unit-phases

unit-phases:
	@$(PHASE) unit $(GO) test -race -timeout $(UNIT_TIMEOUT) $(GOTEST_FLAGS) $(UNIT_PKGS)
	@$(PHASE) norace $(GO) test $(GOTEST_FLAGS) -tags helmconformance -run '^(TestSandbox|TestChartConformsToHelm|TestHelmCasesHoldEveryChomper)' ./pkg/sandbox/ ./pkg/render/
	@$(PHASE) promql sh -c 'cd hack/tools/promql && $(GO) test $(GOTEST_FLAGS) ./...'
	@$(PHASE) dockerfile sh -c 'cd hack/tools/dockerfile && $(GO) test $(GOTEST_FLAGS) ./...'

test-e2e: setup testbin
	@CONVOY_TESTBIN=$$(hack/testbin.sh) $(PHASE) e2e $(GO) test $(GOTEST_FLAGS) -timeout $(E2E_TIMEOUT) -parallel $(E2E_PARALLEL) -count=1 -v ./test/e2e/...

## verify: generated code and reference pages are current, code is
## formatted and vetted, the Markdown's links name files and headings that exist
verify:
	hack/verify-codegen.sh
	$(GO) test -count=1 ./internal/docscheck/
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags helmconformance ./pkg/render/
	cd hack/tools/testbin && $(GO) mod verify >/dev/null
	cd hack/tools/promql && $(GO) mod verify >/dev/null && $(GO) vet ./...
	cd hack/tools/dockerfile && $(GO) mod verify >/dev/null && $(GO) vet ./...

## fuzz: every native fuzz target for FUZZTIME each (default 1m, or a count
## such as 300x); a crash is written to testdata/fuzz/ and becomes a test case
FUZZTIME ?= 1m
fuzz:
	FUZZTIME=$(FUZZTIME) hack/fuzz.sh

## run: a local control plane with convoy-apiserver and an example Release, until Ctrl-C
run: build
	@bindir=$$(hack/testbin.sh) && exec $(BIN_DIR)/local-up \
		--dir "$(LOCAL_DIR)" \
		--bin-dir "$$bindir" \
		--convoy-apiserver "$(BIN_DIR)/convoy-apiserver" \
		--crds artifacts/crds \
		--manifests artifacts/rbac,artifacts/rules \
		--examples artifacts/examples \
		--chart artifacts/charts/web

## bench: the drift check of 500 objects against the local control plane, vs
## kubectl diff --server-side; BENCH_ARGS adds flags (go run ./hack/bench -h)
BENCH_ARGS ?=
bench: build
	@bindir=$$(hack/testbin.sh) && $(GO) run ./hack/bench --bin-dir "$$bindir" --convoy-apiserver $(BIN_DIR)/convoy-apiserver $(BENCH_ARGS)
	$(GO) test -run xxx -bench . -benchmem ./pkg/render/ ./pkg/compare/ ./pkg/health/ ./pkg/source/

## bench-fleet: RELEASES Releases of 20 objects on the local control plane, a
## cold and a steady round with the caches off and on, in the same run;
## BENCH_FLEET_ARGS adds flags (go run ./hack/bench-fleet -h)
RELEASES ?= 1000
BENCH_FLEET_ARGS ?=
bench-fleet: build
	@bindir=$$(hack/testbin.sh) && $(GO) run ./hack/bench-fleet --bin-dir "$$bindir" --convoy-apiserver $(BIN_DIR)/convoy-apiserver --releases $(RELEASES) $(BENCH_FLEET_ARGS)

## bench-view: the list page of kubectl convoy view for RELEASES Releases in
## one namespace on the local control plane, vs kubectl get releases and
## kubectl convoy release list
bench-view: build
	@bindir=$$(hack/testbin.sh) && $(GO) run ./hack/bench-view --bin-dir "$$bindir" --kubectl-convoy $(BIN_DIR)/kubectl-convoy --releases $(RELEASES)

clean:
	rm -rf $(BIN_DIR) $(LOCAL_DIR)
