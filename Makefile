# universe operator — see README.md. `make help` lists the targets.
SHELL := /usr/bin/env bash
.DEFAULT_GOAL := help

export GOTOOLCHAIN := local
# A semantic version, also the image tag: a release tag as git describes it, else v0.0.0-g<commit>.
VERSION ?= $(or $(shell git describe --tags --always --dirty 2>/dev/null | sed -E '/^v[0-9]/!s/^/v0.0.0-g/'),v0.0.0-dev)
LDFLAGS := -X main.version=$(VERSION)
# Build tags of the operator binary (hack/image's BuildTags, the Dockerfile's and e2e's
# build say the same): kustomize's Go-plugin loader links package plugin, which makes the
# linker export every symbol and keep every exported method (+50 MiB resident at start);
# the git path refuses plugins anyway.
GOTAGS := kustomize_disable_go_plugin_support
# Where hack/build-controlplane.sh caches etcd, kube-apiserver, … (outside the checkout).
export CONTROLPLANE_BIN_DIR ?= $(shell hack/build-controlplane.sh --dir)
# envtest's kube-apiserver gets more than its default 20 s to start on a loaded 2-core machine.
export KUBEBUILDER_CONTROLPLANE_START_TIMEOUT ?= 120s
GO_TEST ?= go test
TEST_FLAGS ?= -timeout 40m -count=1
PKG ?= ./...
# RUN narrows a target to the tests matching a regexp: make test PKG=./reconcile/ RUN=TestUpgrade
RUN ?=
RUN_FLAG := $(if $(RUN),-run '$(RUN)')

help: ## List the targets
	@awk 'BEGIN{FS=":.*## "} /^[a-zA-Z0-9_-]+:.*## /{printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## Build bin/operator
	go build -tags $(GOTAGS) -ldflags "$(LDFLAGS)" -o bin/operator ./cmd/operator

image: ## Build the operator image index (linux/amd64 + linux/arm64) without Docker into .cache/image (OCI layout, OCI archive, docker tarballs)
	go run ./hack/image build --version $(VERSION) --revision $$(git rev-parse HEAD) \
		--created $$(git log -1 --format=%ct) --out $(CURDIR)/.cache/image

image-push: image ## Push the image index built by `make image` to $(REGISTRY)/operator:<version> (ghcr.io/openuniverse is the install default)
	@test -n "$(REGISTRY)" || { echo "set REGISTRY, e.g. make image-push REGISTRY=ghcr.io/openuniverse"; exit 1; }
	go run ./hack/image push --registry $(REGISTRY) --out $(CURDIR)/.cache/image

chromium: ## Install headless Chromium for the deploy plane's page test, when apt can (make test then fails TestDeployPlaneUI without it)
	@hack/install-chromium.sh || echo "chromium: not installed (needs root and apt); TestDeployPlaneUI fails under make test and CI"

controlplane: ## Build the local control-plane binaries into the cache (idempotent)
	hack/build-controlplane.sh

# Under make test the deploy plane's browser test fails, not skips, when Chromium cannot run.
test: controlplane chromium ## Run every test: unit, integration on a real apiserver, e2e
	DEPLOY_PLANE_UI_REQUIRED=1 $(GO_TEST) $(TEST_FLAGS) $(RUN_FLAG) $(PKG)

test-unit: ## Run the tests that need no apiserver (fast)
	$(GO_TEST) -short -count=1 $(RUN_FLAG) $(PKG)

e2e: controlplane build ## Run the end-to-end suite only
	$(GO_TEST) $(TEST_FLAGS) -v ./e2e/...

# BENCH_CORPORA and BENCH_TOOLS narrow `make bench` (see e2e/bench_test.go).
bench: controlplane ## kubectl, operator up, operator run and Flux side by side at 1000 and 10000 objects, push latency (builds Flux once); tables in .cache/bench/
	FLUX_BIN_DIR=$$(hack/build-flux.sh | tail -1) BENCH_OUT=$(CURDIR)/.cache/bench \
		$(GO_TEST) -run '^$$' -bench 'PushLatency|SideBySide' -benchtime 1x -timeout 150m ./e2e/

bench-sweep: controlplane ## The in-process sweep vs kubectl apply --server-side over 1000 CRs, and the sweep's RSS
	$(GO_TEST) -run '^$$' -bench 'SweepVsKubectl|SweepRSS' -benchtime 1x ./reconcile/gitops/

# Sizes for bench-kinds, comma-separated; KINDS_BENCH_FLAGS adds `operator run` flags.
KINDS_BENCH_N ?= 1000
bench-kinds: controlplane ## Kind controllers: KINDS_BENCH_N Service CRs at once on kwok: time to Ready, requests per CR, RSS, no-op resyncs
	KINDS_BENCH_N=$(KINDS_BENCH_N) $(GO_TEST) -run '^$$' -bench 'KindMaterialize' -benchtime 1x -timeout 90m ./e2e/

FUZZTIME ?= 30s
fuzz: ## Run each fuzz target for FUZZTIME (seeds in testdata/fuzz also run in every go test)
	go test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./source/
	go test -run '^$$' -fuzz '^FuzzWebhookVerify$$' -fuzztime $(FUZZTIME) ./reconcile/gitops/
	go test -run '^$$' -fuzz '^FuzzMaskSecret$$' -fuzztime $(FUZZTIME) ./reconcile/
	go test -run '^$$' -fuzz '^FuzzValidBranch$$' -fuzztime $(FUZZTIME) ./source/
	go test -run '^$$' -fuzz '^FuzzTenantRewrite$$' -fuzztime $(FUZZTIME) ./upgrade/image/
	go test -run '^$$' -fuzz '^FuzzRegistryAnswer$$' -fuzztime $(FUZZTIME) ./upgrade/image/

generate: ## Regenerate deepcopy code and CRD bundles
	go generate ./kinds/...

verify: generate ## Fail when generated files are stale
	git diff --exit-code -- kinds
	@test -z "$$(git status --porcelain -- kinds)" || { git status --porcelain -- kinds; exit 1; }

fmt: ## gofmt the tree
	gofmt -w $$(git ls-files '*.go')

vet: ## go vet
	go vet ./...

lint: ## golangci-lint (pinned in hack/lint/go.mod, built once into the cache): the design's import rules and more
	$$(hack/build-lint.sh) run ./...

demo: controlplane build ## Start a control plane and git server and run the operator on the example universe
	hack/demo.sh

cluster-up: controlplane ## Start a local control plane in .cache/cluster (kubeconfig printed)
	go run ./hack/controlplane up --dir $(CURDIR)/.cache/cluster

cluster-down: ## Stop the control plane started by cluster-up
	go run ./hack/controlplane down --dir $(CURDIR)/.cache/cluster

.PHONY: help build image image-push controlplane chromium test test-unit e2e bench bench-sweep bench-kinds fuzz generate verify fmt vet lint demo cluster-up cluster-down
