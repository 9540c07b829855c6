# kernelet — build, test and demo. `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
LDFLAGS := -X github.com/kernelet/kernelet/agent.Version=$(VERSION)
# kernelet is built as the upstream kubelet is, static (CGO_ENABLED=0), and
# with gRPC's `grpcnotrace` tag: without it grpc imports golang.org/x/net/trace,
# whose html/template calls reflect's Method by name, which makes the linker
# keep every exported method of every reachable type (108 MB binary instead of
# 65 MB, ~20 MiB more RSS; see bench/footprint_test.go).
KERNELET_TAGS := grpcnotrace
# Stamp the VCS revision (kernelet_build_info) when building from a checkout.
BUILDVCS := $(shell git rev-parse --git-dir >/dev/null 2>&1 && echo -buildvcs=true)
# The e2e package's guard against a hang (a quiet run takes ~23 min; 30 min
# was passed once on a machine also running the conformance kit).
E2E_TIMEOUT ?= 40m
# The runtime matrix (docs/testing.md): make test runs every e2e test against
# containerd 1.6 (the host's), then these again against containerd 2
# (KERNELET_TEST_RUNTIME=containerd2): 20 tests, 355 s on the 2-core machine
# under load 20 (2026-11-29), within the 8 minutes it may add; `make
# e2e-containerd2` runs the whole package against containerd 2
# (E2E_CONTAINERD2_RUN=. by default there).
# Within those, what does not depend on the runtime is not run twice: the
# API server outage of TestClusterNode (~61 s; the pods only keep running).
E2E_CONTAINERD2_SKIP ?= ^TestClusterNode$$/^APIServerOutage$$
E2E_CONTAINERD2_RUN ?= ^(TestCRISmoke|TestCRIPodNetwork|TestAgentPods|TestAgentPodEndings|TestPodLifecycle|TestAgentRestartRules|TestAgentRestartAllContainers|TestProbes|TestAgentVolumes|TestAgentEnvFiles|TestAgentHostnames|TestAgentRefusesUnimplementedPodFields|TestPodConfig|TestRunOnce|TestContainerGCCrashLoop|TestImageGCThresholds|TestContainerLogRotation|TestContainerdDownAfterCrash|TestKubeletAPI|TestClusterNode)$$
# One id for every process of a test run: names of cgroups, links, state dirs.
KERNELET_TEST_RUN ?= kltest$(shell od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
export KERNELET_TEST_RUN
# Tests use this prebuilt workload binary instead of building their own.
export KERNELET_TESTBOX := $(BIN)/testbox
# Tests that run kernelet's binaries use these instead of building them.
export KERNELET_BIN := $(BIN)

.DEFAULT_GOAL := build
.PHONY: help build deps bench-deps components containerd2 vm-node-image vm-node generate generate-check featuregates featuregates-check kubeletflags kubeletflags-check test test-unit fuzz e2e faults soak bench bench-footprint bench-objects bench-probes bench-scrape-kubelet bench-eviction bench-pressure bench-pressure-v2 bench-reaction bench-pleg bench-density bench-density-v2 e2e-containerd2 e2e-kubeadm e2e-rotation e2e-throttle e2e-node-upstream demo lint clean

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## build bin/kernelet, bin/testbox and the test tools
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build $(BUILDVCS) -tags '$(KERNELET_TAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/kernelet ./cmd/kernelet
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags='-s -w' -o $(BIN)/testbox ./test/testbox
	$(GO) build -o $(BIN)/testenv ./hack/testenv
	$(GO) build -o $(BIN)/leakcheck ./hack/leakcheck
	$(GO) build -o $(BIN)/csidriver ./test/csidriver/cmd/csidriver

# The host benchmarks run pods on the host's containerd: its packages, installed when
# missing (a clean machine), as `make demo` does.
bench-deps:
	@hack/deps.sh containerd runc

deps: ## install the Debian packages the tests and demo need (only missing ones)
	hack/deps.sh containerd runc vm vmnode metrics browser csi

# The test control plane, built from the Go module proxy into the cache
# outside the repository (~/.cache/kernelet, keyed by version): a no-op that
# prints what it found when cached; a cold build takes many minutes. Run here
# as its own step so that no test hides it (tests still build as a fallback).
# metrics-server (TestKubectlTop) is cheap cold (~3 min with downloads); the
# sample device plugin (TestDevicePlugins) ~10 s once the control plane is.
# kubeadm (TestKubeadmJoin) ~1 min once the control plane's modules are there.
components: ## build or find etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubeadm and the upstream sample device plugin (hack/apiserver/build.sh), metrics-server (hack/metrics-server/build.sh)
	@echo "== components: SAMPLE_DEVICE_PLUGIN=1 KUBEADM=1 hack/apiserver/build.sh"
	@time SAMPLE_DEVICE_PLUGIN=1 KUBEADM=1 hack/apiserver/build.sh
	@echo "== components: hack/metrics-server/build.sh"
	@time hack/metrics-server/build.sh

# containerd 2 and runc for the host's containerd 2 test instance
# (test/env/containerd, KERNELET_TEST_RUNTIME=containerd2 and the tests that
# need containerd 2), built from the Go module proxy into the cache outside
# the repository (~/.cache/kernelet/{containerd,runc}/<version>-<recipe>): a
# no-op that prints what it found when cached; cold ~4 min + ~1 min.
containerd2: ## build or find containerd 2 and runc for the host's containerd 2 test instance (hack/containerd2/)
	@hack/deps.sh runc
	@echo "== containerd2: hack/containerd2/containerd.sh"
	@time hack/containerd2/containerd.sh
	@echo "== containerd2: hack/containerd2/runc.sh"
	@time hack/containerd2/runc.sh

# The cgroup v2 test node's disk (Debian 12, systemd, containerd 2 built from
# the Go module proxy, the test images), cached outside the repository
# (~/.cache/kernelet/vmnode/<key of its inputs>): a no-op that prints what it
# found when cached; cold ~2–4 min. Its own step so that no test hides it.
vm-node-image: ## build or find the cgroup v2 test node's disk (hack/vmnode/build.sh; needs bin/testbox from make build)
	@hack/deps.sh vmnode
	@hack/deps.sh runc
	@echo "== vm-node-image: hack/vmnode/build.sh"
	@time hack/vmnode/build.sh

vm-node: build vm-node-image ## boot the cgroup v2 test node with bin/kernelet as its systemd unit, print the ssh command; Ctrl-C stops it (CONSOLE=1 shows the serial console, CGROUP_DRIVER=systemd the systemd driver)
	$(BIN)/testenv vmnode up $(if $(CONSOLE),--console) $(if $(CGROUP_DRIVER),--cgroup-driver $(CGROUP_DRIVER))

generate: ## regenerate the bpf2go objects (needs clang, libbpf, bpftool); VMLINUX=1 also re-dumps bpf/c/vmlinux.h from this kernel's BTF
	hack/deps.sh bpf
	$(if $(VMLINUX),bpf/c/vmlinux.sh)
	$(GO) generate ./bpf/...

# Regenerates into the working tree and fails when that changed anything in
# bpf/ compared with the tree before (a snapshot in a temporary git index, so
# uncommitted edits to the C and their regenerated objects are fine).
generate-check: ## regenerate the bpf objects and fail if bpf/ changes (reproducibility)
	@idx=$$(mktemp); trap 'rm -f "$$idx"' EXIT; \
	cp "$$(git rev-parse --git-path index)" "$$idx" && GIT_INDEX_FILE="$$idx" git add -A -- bpf/ && \
	$(MAKE) --no-print-directory generate && \
	new=$$(GIT_INDEX_FILE="$$idx" git ls-files --others --exclude-standard -- bpf/) && \
	if ! GIT_INDEX_FILE="$$idx" git diff --exit-code --stat -- bpf/ || [ -n "$$new" ]; then \
		echo "generate-check: make generate changed bpf/ $$new"; exit 1; \
	fi; echo "generate-check: bpf/ reproduced byte for byte"

# The feature gate table of kubelet v1.37.2 (agent/config/featuregates_table.go),
# generated from the Kubernetes sources in the module cache (hack/featuregates).
K8S_SRC := $(shell $(GO) env GOMODCACHE)/k8s.io/kubernetes@v1.37.2
featuregates: ## regenerate agent/config/featuregates_table.go from kubernetes v1.37.2's sources (module cache; downloads the missing modules)
	$(GO) run ./hack/featuregates

featuregates-check: ## fail if agent/config/featuregates_table.go differs from the generator's output (downloads kubernetes v1.37.2's sources into the module cache once)
	@[ -d "$(K8S_SRC)" ] || $(GO) mod download k8s.io/kubernetes@v1.37.2
	$(GO) run ./hack/featuregates -check

# kubelet v1.37.2's command line (agent/config/kubeletflags/table.go), generated
# from the Kubernetes sources in the module cache (hack/kubeletflags).
kubeletflags: ## regenerate agent/config/kubeletflags/table.go from kubelet v1.37.2's sources (module cache; downloads the missing modules)
	$(GO) run ./hack/kubeletflags

kubeletflags-check: ## fail if agent/config/kubeletflags/table.go differs from the generator's output
	$(GO) run ./hack/kubeletflags -check

lint: featuregates-check kubeletflags-check ## gofmt, go vet, staticcheck, the feature gate and kubelet flag tables
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags vmtest ./test/vm/...
	$(GO) vet -tags faults ./test/e2e/
	@if $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -version >/dev/null 2>&1; then \
		$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./... && \
		$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -tags faults ./test/e2e/; \
	else echo "staticcheck not available from the module proxy; skipped"; fi

test-unit: ## fast tests, no privileges or real components (-short)
	$(GO) test -short -count=1 ./...

# Everything CI runs: packages, every real-component e2e test (containerd,
# kube-apiserver, the cgroup v2 VM), each benchmark once, then the leak check
# — which runs even when tests failed.
test: deps build components containerd2 vm-node-image lint generate-check ## everything CI runs (installs what it needs; see README)
	@echo "== reap: leftovers of killed runs (testenv reap)"
	@$(BIN)/testenv reap
	@$(BIN)/leakcheck snapshot $(BIN)/leakcheck-before.json
	@echo "== test run $$KERNELET_TEST_RUN"
	@rc=0; \
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /test/e2e) || rc=1; \
	$(GO) test -count=1 -v -timeout $(E2E_TIMEOUT) ./test/e2e/... 2>&1 | tee $(BIN)/e2e.log; [ $${PIPESTATUS[0]} -eq 0 ] || rc=1; \
	echo "== e2e smoke lines:"; grep -E '(CRI|apiserver|VM) smoke:' $(BIN)/e2e.log || { echo "missing smoke lines"; rc=1; }; \
	echo "== e2e against containerd 2: $(E2E_CONTAINERD2_RUN), without $(E2E_CONTAINERD2_SKIP)"; \
	KERNELET_TEST_RUNTIME=containerd2 $(GO) test -count=1 -v -timeout 20m -run '$(E2E_CONTAINERD2_RUN)' -skip '$(E2E_CONTAINERD2_SKIP)' ./test/e2e/ 2>&1 | tee $(BIN)/e2e-containerd2.log; [ $${PIPESTATUS[0]} -eq 0 ] || rc=1; \
	grep -q 'containerd (containerd2): started' $(BIN)/e2e-containerd2.log || { echo "the containerd 2 pass did not run against containerd 2"; rc=1; }; \
	$(FAULTS_TEST) 2>&1 | tee $(BIN)/faults.log; [ $${PIPESTATUS[0]} -eq 0 ] || rc=1; \
	$(GO) test -count=1 -run '^$$' -bench . -skip '^Benchmark(Footprint|ObjectStrategies|Probes|CadvisorScrapeKubelet|Eviction|Pressure|PressureV2|Reaction|EventedPLEG|Density|DensityV2)$$' -benchtime=1x ./... || rc=1; \
	FUZZ_PERCENT=50 hack/fuzz.sh || rc=1; \
	$(BIN)/leakcheck compare $(BIN)/leakcheck-before.json || rc=1; \
	exit $$rc

# The long fault tests (test/e2e/faults_*_test.go with the faults build
# tag, ~4 min): containerd restarted under 10 pods, the agent SIGKILLed at
# 20 random points (KERNELET_FAULT_SEED replays a run), kube-apiserver
# restarted 5 times. make test runs them after the e2e tests; the short
# fault tests are in the e2e run.
FAULTS_TEST = $(GO) test -tags faults -count=1 -v -timeout 20m -run '^(TestFaultContainerdRestart|TestFaultAgentKilled|TestFaultAPIServerRestarts)$$' ./test/e2e/

faults: build components ## the long fault-injection e2e tests (make test runs them too)
	@$(BIN)/testenv reap
	@$(BIN)/leakcheck snapshot $(BIN)/leakcheck-before.json
	@echo "== faults run $$KERNELET_TEST_RUN"
	@rc=0; \
	$(FAULTS_TEST) || rc=1; \
	$(BIN)/leakcheck compare $(BIN)/leakcheck-before.json || rc=1; \
	exit $$rc

fuzz: ## every fuzz target for its count of executions (hack/fuzz.sh); make test runs half of each count
	hack/fuzz.sh

e2e: deps build components containerd2 vm-node-image ## only the end-to-end tests against real components
	@$(BIN)/testenv reap
	$(GO) test -count=1 -v -timeout $(E2E_TIMEOUT) ./test/e2e/...

e2e-containerd2: deps build components containerd2 vm-node-image ## the e2e tests of E2E_CONTAINERD2_RUN (default: all) against containerd 2
	@$(BIN)/testenv reap
	KERNELET_TEST_RUNTIME=containerd2 $(GO) test -count=1 -v -timeout $(E2E_TIMEOUT) -run '$(if $(filter command line environment,$(origin E2E_CONTAINERD2_RUN)),$(E2E_CONTAINERD2_RUN),.)' ./test/e2e/...

# Not in `make test` (3.5–4 min beyond its budget): TestV2Node's Throttle
# subtest, memoryThrottle in the cgroup v2 node (issue 28).
e2e-throttle: deps build components vm-node-image ## TestV2Node's memoryThrottle subtest in the cgroup v2 node (~8 min with the boot)
	@$(BIN)/testenv reap
	KERNELET_V2NODE_THROTTLE=1 $(GO) test -count=1 -v -timeout 30m -run '^TestV2Node$$/^(Ready|Throttle)$$' ./test/e2e/

# Not in `make test` (CI joins kernelet alone, ~2 min): TestKubeadmJoin with
# the real kubelet v1.37.2 joined after kernelet in the same v2 node, for
# both join-to-Ready times (built here from the module proxy, cached).
e2e-kubeadm: deps build components vm-node-image ## kubeadm join in the cgroup v2 node: kernelet, then the real kubelet v1.37.2 (~5 min)
	@KUBELET=1 hack/apiserver/build.sh >/dev/null
	@$(BIN)/testenv reap
	KERNELET_KUBEADM_UPSTREAM=1 $(GO) test -count=1 -v -timeout 20m -run '^TestKubeadmJoin$$' ./test/e2e/

# Not in `make test` (long, and upstream's suite, not ours): the upstream node
# e2e specs (e2e_node.test of kubernetes v1.37.2, hack/e2enode/build.sh) of the
# device plugins, the device, CPU, memory and topology managers and the
# podresources API against kernelet, then the same focus against the real
# kubelet v1.37.2 (E2E_NODE_AGENTS picks; E2E_NODE_FOCUS/E2E_NODE_SKIP narrow).
# Results per agent in bin/e2e-node/<agent>-<time>/results.tsv; docs/testing.md.
E2E_NODE_AGENTS ?= kernelet kubelet
e2e-node-upstream: build ## upstream node e2e specs of the resource managers against kernelet and the real kubelet (hack/e2enode)
	@$(BIN)/testenv reap
	@rc=0; for a in $(E2E_NODE_AGENTS); do hack/e2enode/run.sh $$a || rc=1; done; exit $$rc

# Not in `make test` (CI waits for one renewal): TestTLSBootstrap for 10
# minutes of pod churn with at least two client certificate renewals (3-minute
# certificates), the issue's acceptance run.
e2e-rotation: build components ## TestTLSBootstrap's rotation for 10 minutes, at least 2 client certificate renewals
	@$(BIN)/testenv reap
	KERNELET_TLS_RENEWALS=2 KERNELET_TLS_ROTATION_RUN=10m $(GO) test -count=1 -v -timeout 30m -run '^TestTLSBootstrap$$' ./test/e2e/

# TestSoak: 110 pods created and deleted in waves for $(SOAK) per variant (API
# pods, then static pods), goroutines/fds/RSS/cgroup dirs back to their start
# values within the bounds it prints. `make test` runs it with the e2e tests
# for its default of 1 minute per variant (6 to 12 waves here). Root.
SOAK ?= 10m
soak: deps build components ## 110 pods in waves for SOAK (default 10m) per variant; the table of goroutines, fds, RSS, cgroup dirs
	@$(BIN)/testenv reap
	@$(BIN)/leakcheck snapshot $(BIN)/leakcheck-before.json
	@echo "== soak run $$KERNELET_TEST_RUN, $(SOAK) per variant"
	@rc=0; \
	KERNELET_SOAK=$(SOAK) $(GO) test -count=1 -v -timeout 90m -run '^TestSoak$$' ./test/e2e/ || rc=1; \
	$(BIN)/leakcheck compare $(BIN)/leakcheck-before.json || rc=1; \
	exit $$rc

bench: build bench-deps ## run the benchmarks for real (ratios against same-run baselines)
	$(GO) test -run '^$$' -bench . -benchmem ./bench/...

# bench_with_kubelet (name, benchmark, timeout) runs one benchmark of ./bench
# against a real kubelet: KERNELET_KUBELET_BIN, else the one hack/apiserver/build.sh
# builds or finds at the API server's version (KUBELET=1, cached); a reap before
# and a leak check around it.
define bench_with_kubelet
	@echo "== reap: leftovers of killed runs (testenv reap)"
	@$(BIN)/testenv reap
	@kubelet="$$KERNELET_KUBELET_BIN"; \
	if [ -z "$$kubelet" ]; then \
		echo "== kubelet: KUBELET=1 hack/apiserver/build.sh"; \
		out=$$(KUBELET=1 hack/apiserver/build.sh) || exit 1; echo "$$out"; \
		kubelet=$$(echo "$$out" | sed -n 's/^KUBELET=//p'); \
	fi; \
	$(BIN)/leakcheck snapshot $(BIN)/leakcheck-before.json; \
	echo "== $(1) run $$KERNELET_TEST_RUN"; \
	rc=0; \
	KERNELET_KUBELET_BIN=$$kubelet $(GO) test -count=1 -v -timeout $(3) -run '^$$' -bench '^$(2)$$' -benchtime=1x ./bench/ || rc=1; \
	$(BIN)/leakcheck compare $(BIN)/leakcheck-before.json || rc=1; \
	exit $$rc
endef

# Not in `make test`: it needs a real kubelet: $KERNELET_KUBELET_BIN, else the one
# hack/apiserver/build.sh builds or finds at the API server's version (KUBELET=1, cached,
# as bench-eviction). Root; about 15 minutes (KERNELET_FOOTPRINT_PODS=0,30,110 and
# KERNELET_FOOTPRINT_SETTLE=30s are the defaults; KERNELET_FOOTPRINT_AGENTS=kernelet measures
# kernelet alone, KERNELET_FOOTPRINT_DUMP=DIR saves smaps, heap profile and /metrics per level).
bench-footprint: build bench-deps ## kernelet's idle RSS and CPU with 0, 30 and 110 pods beside the real kubelet's
	$(call bench_with_kubelet,footprint,BenchmarkFootprint,60m)

# Not in `make test`: it needs the real kubelet (as bench-footprint) and runs
# each agent through a 30-pod burst and 2 pods/s for 2 minutes: ~10 minutes.
# Root. KERNELET_DENSITY_BURSTS=30,110 adds the heavy 110-pod burst,
# KERNELET_DENSITY_STEADY=30s (0: none) shortens the steady phase,
# KERNELET_DENSITY_RUNS=3 repeats the pair, KERNELET_DENSITY_AGENTS=kernelet
# runs one agent, KERNELET_DENSITY_PROFILE=DIR saves pprof CPU and block
# profiles of each burst (bench/density_test.go).
bench-density: build bench-deps ## pod start, readiness and deletion at density, API requests per pod: kernelet vs the real kubelet
	$(call bench_with_kubelet,density,BenchmarkDensity,90m)

# Not in `make test`: it needs the conformance kit's kubelet (as bench-footprint)
# and runs 110 API pods under each agent in turn (~3 min). Root.
bench-scrape-kubelet: build bench-deps ## agent CPU of one /metrics/cadvisor scrape with 110 pods: the kit's kubelet vs kernelet
	@$(BIN)/leakcheck snapshot $(BIN)/leakcheck-before.json
	@echo "== scrape run $$KERNELET_TEST_RUN"
	@rc=0; \
	$(GO) test -count=1 -v -timeout 30m -run '^$$' -bench '^BenchmarkCadvisorScrapeKubelet$$' -benchtime=1x ./bench/ || rc=1; \
	$(BIN)/leakcheck compare $(BIN)/leakcheck-before.json || rc=1; \
	exit $$rc

# Not in `make test`: 100 API pods, twice, take minutes on 2 CPUs. Root.
bench-objects: build bench-deps components ## API requests and watches for configMaps/secrets of 100 pods: Watch vs Get strategy
	@$(BIN)/leakcheck snapshot $(BIN)/leakcheck-before.json
	@echo "== object strategies run $$KERNELET_TEST_RUN"
	@rc=0; \
	$(GO) test -count=1 -v -timeout 30m -run '^$$' -bench '^BenchmarkObjectStrategies$$' -benchtime=1x ./bench/ || rc=1; \
	$(BIN)/leakcheck compare $(BIN)/leakcheck-before.json || rc=1; \
	exit $$rc

# Not in `make test` (a few minutes): the agent's CPU with 110 pods × 3
# probes at period 1 s against the same pods without probes.
bench-pleg: build bench-deps containerd2 ## pod start latency and idle CPU with the evented PLEG vs relist alone on containerd 2 (same run, ~10 min)
	@$(BIN)/leakcheck snapshot $(BIN)/leakcheck-before.json
	@echo "== evented PLEG run $$KERNELET_TEST_RUN"
	@rc=0; \
	$(GO) test -count=1 -v -timeout 40m -run '^$$' -bench '^BenchmarkEventedPLEG$$' -benchtime=1x ./bench/ || rc=1; \
	$(BIN)/leakcheck compare $(BIN)/leakcheck-before.json || rc=1; \
	exit $$rc

bench-probes: build bench-deps ## kernelet's CPU with 110 pods × 3 probes vs without probes (same run)
	@$(BIN)/leakcheck snapshot $(BIN)/leakcheck-before.json
	@echo "== probes run $$KERNELET_TEST_RUN"
	@rc=0; \
	$(GO) test -count=1 -v -timeout 30m -run '^$$' -bench '^BenchmarkProbes$$' -benchtime=1x ./bench/ || rc=1; \
	$(BIN)/leakcheck compare $(BIN)/leakcheck-before.json || rc=1; \
	exit $$rc

# Not in `make test`: it needs the real kubelet, built here from the module
# proxy at the API server's version (hack/apiserver/build.sh KUBELET=1,
# cached), and runs 20 pods per workload per agent: many minutes. Root.
# KERNELET_BENCH_EVICTION_RUNS, _RATES and _AGENTS shorten it (bench/eviction_test.go).
bench-eviction: build bench-deps ## eviction latency and evicted-before-OOM: kernelet vs the real kubelet vs kernelet's kubelet mode
	$(call bench_with_kubelet,eviction,BenchmarkEviction,4h)

# Issue 28's pressure replay, one command for both machine kinds: on the host (cgroup v1,
# bench/pressure_test.go) and then in the cgroup v2 node (qemu TCG, systemd driver, containerd 2,
# bench/pressure_v2_test.go), one table each: per agent (kernelet in dry run as the no-agent
# yardstick, the real kubelet, kernelet's kubelet mode, kernelet, kernelet with its options,
# systemd-oomd in the v2 node) the workloads on kubepods limited to 512 MiB.
# KERNELET_BENCH_PRESSURE_MACHINES (host,v2), _RUNS (default 3), _AGENTS, _WORKLOADS narrow it;
# KERNELET_BENCH_PRESSURE_SWAP=zram puts the v2 node's swap on zram instead of a swap file.
bench-pressure: build bench-deps vm-node-image ## memory workloads replayed per agent on the host and in the v2 node: evicted before OOM, needless evictions, reaction, bystanders
	$(call bench_with_kubelet,pressure,BenchmarkPressure(V2)?,10h)

bench-reaction: build bench-deps ## issue 28 item 4: kernelet's reaction from 200 to 2000 MiB/s with kubelet's 100Mi threshold, idle and with two busy cores, step by step
	@$(BIN)/testenv reap
	@$(BIN)/leakcheck snapshot $(BIN)/leakcheck-before.json
	@echo "== reaction run $$KERNELET_TEST_RUN"
	@rc=0; \
	$(GO) test -count=1 -v -timeout 60m -run '^$$' -bench '^BenchmarkReaction$$' -benchtime=1x ./bench/ || rc=1; \
	$(BIN)/leakcheck compare $(BIN)/leakcheck-before.json || rc=1; \
	exit $$rc

bench-pressure-v2: build vm-node-image ## bench-pressure in the cgroup v2 node only (KERNELET_BENCH_PRESSURE_MACHINES=v2)
	$(call bench_with_kubelet,pressure-v2,BenchmarkPressureV2,6h)

# Issue 29 item 3 (bench/density_v2_test.go): bench-density's phases in the cgroup v2 node, sized
# for TCG (bursts of 10 and 30 pods, 0.2 pods/s for 2 min); KERNELET_DENSITY_BURSTS, _RATE,
# _STEADY, _RUNS and _AGENTS as for bench-density.
bench-density-v2: build vm-node-image ## bench-density in the cgroup v2 node (qemu TCG, systemd driver, containerd 2, kernelet's evented PLEG)
	$(call bench_with_kubelet,density-v2,BenchmarkDensityV2,3h)

demo: build ## a private containerd + kernelet; Ctrl-C stops both and cleans up
	hack/deps.sh containerd
	hack/demo.sh

clean: ## remove build output
	rm -rf $(BIN)
