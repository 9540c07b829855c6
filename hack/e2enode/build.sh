#!/usr/bin/env bash
# Builds the upstream node e2e suite, e2e_node.test of k8s.io/kubernetes
# KUBE_VERSION (default v1.37.2), and the ginkgo CLI of the same ginkgo
# version, from the Go module proxy into kernelet's cache, outside the
# repository, keyed by version:
#
#   $CACHE/e2e-node/<KUBE_VERSION>/e2e_node.test
#   $CACHE/e2e-node/<KUBE_VERSION>/ginkgo
#
# CACHE=${KERNELET_CACHE:-$HOME/.cache/kernelet}. The scratch module
# (written by hack/apiserver/build.sh with KUBE_MODULE_DIR: k8s.io/kubernetes
# required, its staging modules replaced by their v0.Y.Z releases) lives in
# $CACHE/e2e-node/<KUBE_VERSION>/src; every go command runs there with
# GOWORK=off. A binary that exists is not rebuilt; a flock serialises runs.
# Prints, last, E2E_NODE_TEST=<path> and GINKGO=<path>.
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-v1.37.2}
CACHE=${KERNELET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kernelet}
dir="$CACHE/e2e-node/$KUBE_VERSION"
src="$dir/src"

export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=local
unset GOOS GOARCH
log() { echo "hack/e2enode/build.sh: $*" >&2; }
command -v go >/dev/null || { log "the go toolchain is required"; exit 1; }

kube_minor=$(echo "$KUBE_VERSION" | sed -E 's/^v1\.([0-9]+)\..*/\1/')

mkdir -p "$dir"
exec 8>"$dir/.lock"
flock 8
if [ -x "$dir/e2e_node.test" ] && [ -x "$dir/ginkgo" ]; then
  log "cached: e2e_node.test and ginkgo $KUBE_VERSION in $dir"
else
  start=$SECONDS
  log "building e2e_node.test $KUBE_VERSION in $src (cold: many minutes, ~3 GB RAM)"
  KUBE_VERSION=$KUBE_VERSION KUBE_MODULE_DIR=$src "$(dirname "$0")/../apiserver/build.sh"
  (cd "$src" && go get -t "k8s.io/kubernetes/test/e2e_node@$KUBE_VERSION")
  pkg=k8s.io/component-base/version
  (cd "$src" && go test -c -vet=off -trimpath -o "$dir/e2e_node.test.tmp" \
    -ldflags "-s -w -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$kube_minor -X $pkg.gitTreeState=clean" \
    k8s.io/kubernetes/test/e2e_node)
  mv "$dir/e2e_node.test.tmp" "$dir/e2e_node.test"
  # The ginkgo CLI at the version the suite pins (parallel runs, reports).
  (cd "$src" && go build -trimpath -o "$dir/ginkgo.tmp" github.com/onsi/ginkgo/v2/ginkgo)
  mv "$dir/ginkgo.tmp" "$dir/ginkgo"
  log "built e2e_node.test and ginkgo $KUBE_VERSION in $((SECONDS - start)) s"
fi
exec 8>&-
echo "E2E_NODE_TEST=$dir/e2e_node.test"
echo "GINKGO=$dir/ginkgo"
