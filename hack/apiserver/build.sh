#!/usr/bin/env bash
# Builds the test control plane from the Go module proxy into kernelet's
# build cache, outside the repository, keyed by version:
#
#   $CACHE/kubernetes/<KUBE_VERSION>/kube-apiserver
#   $CACHE/kubernetes/<KUBE_VERSION>/kube-controller-manager
#   $CACHE/kubernetes/<KUBE_VERSION>/kube-scheduler
#   $CACHE/etcd/<ETCD_VERSION>/etcd
#   $CACHE/kubernetes/<KUBE_VERSION>/kubelet        (only with KUBELET=1)
#   $CACHE/kubernetes/<KUBE_VERSION>/kubeadm        (only with KUBEADM=1)
#
# with CACHE=${KERNELET_CACHE:-$HOME/.cache/kernelet} ($XDG_CACHE_HOME is
# honoured like Go's os.UserCacheDir, so this matches env.CacheDir()).
# Binaries that exist are not rebuilt (a run with everything cached only
# prints what it found). The three Kubernetes components come from one
# scratch module and one `go build` of their three packages, which shares the
# compile work. Parallel runs serialise on a flock per version directory.
#
# Environment:
#   KUBE_VERSION  k8s.io/kubernetes release (default v1.37.2, matching the
#                 client-go v0.37 kernelet uses)
#   ETCD_VERSION  go.etcd.io/etcd/server/v3 release (default: the version
#                 k8s.io/kubernetes@KUBE_VERSION pins in its go.mod)
#   KUBELET=1     also build (or find) the real kubelet from the same scratch
#                 module, for benchmarks against it (bench-eviction); a
#                 separate go build after the control plane, so a run
#                 without it (make components, CI) does no extra work
#   KUBEADM=1     also build (or find) kubeadm from the same scratch module,
#                 for the kubeadm join test in the cgroup v2 node
#   KUBE_MODULE_DIR=DIR
#                 only write the scratch module (kubernetes required, its
#                 staging modules replaced) into DIR and exit: for the other
#                 builds from kubernetes' sources (hack/e2enode/build.sh)
#   SAMPLE_DEVICE_PLUGIN=1
#                 also build (or find) the upstream sample device plugin
#                 (k8s.io/kubernetes/test/images/sample-device-plugin, the
#                 plugin of the node e2e device plugin specs) from the same
#                 scratch module, for the device plugin e2e test
#
# The scratch modules live in the cache dir; every go command runs there with
# GOWORK=off, so the build never sees the repository's go.mod.
# Prints the versions and, last, four machine-readable lines:
#   KUBE_APISERVER=<path>
#   KUBE_CONTROLLER_MANAGER=<path>
#   KUBE_SCHEDULER=<path>
#   ETCD=<path>
# and with KUBELET=1 a fifth:
#   KUBELET=<path>
# with KUBEADM=1:
#   KUBEADM=<path>
# and with SAMPLE_DEVICE_PLUGIN=1:
#   SAMPLE_DEVICE_PLUGIN=<path>
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-v1.37.2}
CACHE=${KERNELET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kernelet}

export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=local
unset GOOS GOARCH

log() { echo "hack/apiserver/build.sh: $*" >&2; }

command -v go >/dev/null || { log "the go toolchain is required"; exit 1; }
command -v flock >/dev/null || { log "flock (util-linux) is required"; exit 1; }

# Go version for the scratch modules' go directive: the local toolchain's.
GO_DIRECTIVE=$(go env GOVERSION | sed -E 's/^go([0-9]+\.[0-9]+(\.[0-9]+)?).*/\1/')

kube_minor=$(echo "$KUBE_VERSION" | sed -E 's/^v1\.([0-9]+)\..*/\1/')
staging_version="v0.${KUBE_VERSION#v1.}"

# new_module DIR NAME writes a minimal go.mod in DIR so that every go command
# run there has its own main module.
new_module() {
  mkdir -p "$1"
  printf 'module %s\n\ngo %s\n' "$2" "$GO_DIRECTIVE" >"$1/go.mod"
  rm -f "$1/go.sum"
}

# kube_gomod prints the path of k8s.io/kubernetes@KUBE_VERSION's go.mod in
# the module cache, downloading it if needed. Must run inside a scratch module.
kube_gomod() {
  go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p'
}

# ---------------------------------------------------------------- versions
# Resolve ETCD_VERSION before taking any lock: it needs kubernetes' go.mod.
kube_dir="$CACHE/kubernetes/$KUBE_VERSION"
kube_src="$kube_dir/src"
if [ -z "${ETCD_VERSION:-}" ]; then
  pinfile="$kube_dir/etcd-version"
  if [ -s "$pinfile" ]; then
    ETCD_VERSION=$(cat "$pinfile")
  else
    mkdir -p "$CACHE"
    tmp=$(mktemp -d "$CACHE/.resolve.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    new_module "$tmp" kltest.invalid/resolve
    gomod=$(cd "$tmp" && kube_gomod)
    ETCD_VERSION=$(sed -nE 's#^[[:space:]]*go\.etcd\.io/etcd/server/v3 (v[^ ]+).*#\1#p' "$gomod" | head -1)
    [ -n "$ETCD_VERSION" ] || { log "cannot find the etcd version pinned by k8s.io/kubernetes@$KUBE_VERSION"; exit 1; }
    mkdir -p "$(dirname "$pinfile")"
    echo "$ETCD_VERSION" >"$pinfile.tmp.$$" && mv "$pinfile.tmp.$$" "$pinfile"
    rm -rf "$tmp"; trap - EXIT
  fi
fi

KUBE_COMPONENTS=(kube-apiserver kube-controller-manager kube-scheduler)
APISERVER_BIN="$kube_dir/kube-apiserver"
CONTROLLER_MANAGER_BIN="$kube_dir/kube-controller-manager"
SCHEDULER_BIN="$kube_dir/kube-scheduler"
ETCD_BIN="$CACHE/etcd/$ETCD_VERSION/etcd"
KUBELET_BIN="$kube_dir/kubelet"
KUBEADM_BIN="$kube_dir/kubeadm"
SAMPLE_DEVICE_PLUGIN_BIN="$kube_dir/sample-device-plugin"

# ------------------------------------------------- the Kubernetes components
kube_missing() {
  local c
  for c in "${KUBE_COMPONENTS[@]}"; do [ -x "$kube_dir/$c" ] || return 0; done
  return 1
}

# kube_module writes the scratch module that requires
# k8s.io/kubernetes@KUBE_VERSION in $kube_src (the caller holds the lock).
kube_module() {
  new_module "$kube_src" kltest.invalid/kubernetes
  local gomod
  gomod=$(cd "$kube_src" && kube_gomod)
  [ -f "$gomod" ] || { log "k8s.io/kubernetes@$KUBE_VERSION: go.mod not found"; exit 1; }

  # Staging modules kubernetes requires at v0.0.0 (it replaces them with
  # ./staging/... in its own build); the proxy serves them as v0.Y.Z.
  local staging
  staging=$(sed -nE 's#^[[:space:]]*(k8s\.io/[^ ]+) v0\.0\.0([[:space:]].*)?$#\1#p' "$gomod" | sort -u)
  [ -n "$staging" ] || { log "no staging modules found in $gomod"; exit 1; }
  # Leave out those the proxy does not serve (e.g. sample-controller).
  local served=() skipped=() m err
  while read -r m err; do
    if [ -z "$err" ]; then served+=("$m"); else skipped+=("$m"); fi
  done < <(cd "$kube_src" && go list -m -e -f '{{.Path}}{{if .Error}} missing{{end}}' \
    $(for m in $staging; do echo "$m@$staging_version"; done))
  log "replacing ${#served[@]} staging modules with $staging_version${skipped[*]:+ (not on the proxy: ${skipped[*]})}"

  {
    printf 'module kltest.invalid/kubernetes\n\ngo %s\n\n' "$GO_DIRECTIVE"
    printf 'require k8s.io/kubernetes %s\n\nreplace (\n' "$KUBE_VERSION"
    for m in "${served[@]}"; do printf '\t%s => %s %s\n' "$m" "$m" "$staging_version"; done
    printf ')\n'
  } >"$kube_src/go.mod"
}

build_kube() {
  mkdir -p "$kube_dir"
  exec 8>"$kube_dir/.lock"
  flock 8
  if ! kube_missing; then
    log "cached: ${KUBE_COMPONENTS[*]} $KUBE_VERSION in $kube_dir"
    exec 8>&-; return
  fi
  log "building ${KUBE_COMPONENTS[*]} $KUBE_VERSION (cold: several minutes, ~2 GB RAM) in $kube_src"
  local start=$SECONDS
  kube_module

  # One go build of all the packages into a temporary directory: the shared
  # dependencies compile once. The binaries are moved in only when all built.
  local out="$kube_dir/.build.$$" pkg=k8s.io/component-base/version c pkgs=()
  for c in "${KUBE_COMPONENTS[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  rm -rf "$out"; mkdir -p "$out"
  (cd "$kube_src" && go build -trimpath -o "$out/" \
    -ldflags "-s -w -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$kube_minor -X $pkg.gitTreeState=clean" \
    "${pkgs[@]}") || { rm -rf "$out"; exit 1; }
  for c in "${KUBE_COMPONENTS[@]}"; do mv "$out/$c" "$kube_dir/$c"; done
  rm -rf "$out"
  log "built ${KUBE_COMPONENTS[*]} $KUBE_VERSION in $((SECONDS - start)) s"
  exec 8>&-
}

# ------------------------------------------------------- kubelet, kubeadm
# build_cmd NAME BIN builds k8s.io/kubernetes/cmd/NAME into BIN in the
# scratch module of build_kube (written again if it is gone), with the same
# version stamps (kubeadm names the kubelet-config and images after them).
build_cmd() {
  local name=$1 bin=$2
  exec 8>"$kube_dir/.lock"
  flock 8
  if [ -x "$bin" ]; then log "cached: $name $KUBE_VERSION in $kube_dir"; exec 8>&-; return; fi
  grep -q '^require k8s.io/kubernetes' "$kube_src/go.mod" 2>/dev/null || kube_module
  log "building $name $KUBE_VERSION (cold: several minutes) in $kube_src"
  local start=$SECONDS pkg=k8s.io/component-base/version
  (cd "$kube_src" && go build -trimpath -o "$bin.tmp.$$" \
    -ldflags "-s -w -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$kube_minor -X $pkg.gitTreeState=clean" \
    "k8s.io/kubernetes/cmd/$name") || { rm -f "$bin.tmp.$$"; exit 1; }
  mv "$bin.tmp.$$" "$bin"
  log "built $name $KUBE_VERSION in $((SECONDS - start)) s"
  exec 8>&-
}

# ---------------------------------------------------- sample device plugin
# build_sample_device_plugin builds test/images/sample-device-plugin in the
# scratch module of build_kube (written again if it is gone).
build_sample_device_plugin() {
  exec 8>"$kube_dir/.lock"
  flock 8
  if [ -x "$SAMPLE_DEVICE_PLUGIN_BIN" ]; then log "cached: sample-device-plugin $KUBE_VERSION in $kube_dir"; exec 8>&-; return; fi
  grep -q '^require k8s.io/kubernetes' "$kube_src/go.mod" 2>/dev/null || kube_module
  log "building sample-device-plugin $KUBE_VERSION in $kube_src"
  local start=$SECONDS
  (cd "$kube_src" && go build -trimpath -ldflags "-s -w" -o "$SAMPLE_DEVICE_PLUGIN_BIN.tmp.$$" \
    k8s.io/kubernetes/test/images/sample-device-plugin) || { rm -f "$SAMPLE_DEVICE_PLUGIN_BIN.tmp.$$"; exit 1; }
  mv "$SAMPLE_DEVICE_PLUGIN_BIN.tmp.$$" "$SAMPLE_DEVICE_PLUGIN_BIN"
  log "built sample-device-plugin $KUBE_VERSION in $((SECONDS - start)) s"
  exec 8>&-
}

# -------------------------------------------------------------------- etcd
build_etcd() {
  local dir="$CACHE/etcd/$ETCD_VERSION"
  mkdir -p "$dir"
  exec 9>"$dir/.lock"
  flock 9
  if [ -x "$ETCD_BIN" ]; then log "cached: etcd $ETCD_VERSION in $dir"; exec 9>&-; return; fi
  log "building etcd $ETCD_VERSION in $dir/src"
  local start=$SECONDS src="$dir/src"
  new_module "$src" kltest.invalid/etcd
  cat >"$src/main.go" <<'EOF'
// Command etcd is etcd's own server main, built from the module proxy.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOF
  (cd "$src" && go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION")
  (cd "$src" && go build -trimpath -ldflags "-s -w" -o "$ETCD_BIN.tmp" .)
  mv "$ETCD_BIN.tmp" "$ETCD_BIN"
  log "built etcd $ETCD_VERSION in $((SECONDS - start)) s"
  exec 9>&-
}

if [ -n "${KUBE_MODULE_DIR:-}" ]; then
  kube_src=$KUBE_MODULE_DIR
  kube_module
  exit 0
fi
build_etcd
build_kube
if [ "${KUBELET:-}" = 1 ]; then build_cmd kubelet "$KUBELET_BIN"; fi
if [ "${KUBEADM:-}" = 1 ]; then build_cmd kubeadm "$KUBEADM_BIN"; fi
if [ "${SAMPLE_DEVICE_PLUGIN:-}" = 1 ]; then build_sample_device_plugin; fi

for c in "${KUBE_COMPONENTS[@]}"; do
  echo "$c: $("$kube_dir/$c" --version 2>&1 | head -1)"
done
echo "etcd: $("$ETCD_BIN" --version 2>&1 | tr '\n' ' ')"
echo "KUBE_APISERVER=$APISERVER_BIN"
echo "KUBE_CONTROLLER_MANAGER=$CONTROLLER_MANAGER_BIN"
echo "KUBE_SCHEDULER=$SCHEDULER_BIN"
echo "ETCD=$ETCD_BIN"
if [ "${KUBELET:-}" = 1 ]; then
  echo "kubelet: $("$KUBELET_BIN" --version 2>&1 | head -1)"
  echo "KUBELET=$KUBELET_BIN"
fi
if [ "${KUBEADM:-}" = 1 ]; then
  echo "kubeadm: $("$KUBEADM_BIN" version -o short 2>&1 | head -1)"
  echo "KUBEADM=$KUBEADM_BIN"
fi
if [ "${SAMPLE_DEVICE_PLUGIN:-}" = 1 ]; then
  echo "SAMPLE_DEVICE_PLUGIN=$SAMPLE_DEVICE_PLUGIN_BIN"
fi
