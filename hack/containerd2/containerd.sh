#!/usr/bin/env bash
# Builds containerd 2 (cmd/containerd, cmd/containerd-shim-runc-v2 and
# cmd/ctr) from the Go module proxy into kernelet's build cache, outside the
# repository, keyed by version and by the build recipe below:
#
#   $CACHE/containerd/<CONTAINERD_VERSION>-<hash of the recipe>/{containerd,containerd-shim-runc-v2,ctr}
#
# Used by the host's containerd 2 test instance (test/env/containerd, with
# the runc of runc.sh beside it) and the cgroup v2 test node's disk
# (hack/vmnode/build.sh).
#
# static (CGO_ENABLED=0: the cgo-only btrfs snapshotter is left out, as in
# containerd's own static builds). CACHE=${KERNELET_CACHE:-$HOME/.cache/kernelet}.
# A cached build only prints what it found; parallel runs serialise on a
# flock in that directory. Prints, last, CONTAINERD_VERSION=<version> and
# CONTAINERD_DIR=<dir>.
#
# Environment: CONTAINERD_VERSION (default v2.4.2, the newest v2.4.x the
# module proxy served when this was written).
set -euo pipefail

CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.4.2}
CACHE=${KERNELET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kernelet}
export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=local
unset GOOS GOARCH

log() { echo "hack/containerd2/containerd.sh: $*" >&2; }
command -v go >/dev/null || { log "the go toolchain is required"; exit 1; }
command -v flock >/dev/null || { log "flock (util-linux) is required"; exit 1; }

# The recipe: what the binaries are made of. Its hash keys the cache (not
# this script's text, so comments and moves need no rebuild).
v=github.com/containerd/containerd/v2/version
LDFLAGS="-s -w -X $v.Version=$CONTAINERD_VERSION -X $v.Revision=module-proxy -X $v.Package=github.com/containerd/containerd/v2"
PKGS="github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/ctr"
RECIPE="CGO_ENABLED=$CGO_ENABLED go build -trimpath -ldflags '$LDFLAGS' $PKGS"
dir="$CACHE/containerd/$CONTAINERD_VERSION-$(echo "$RECIPE" | sha256sum | cut -c1-12)"
bins=(containerd containerd-shim-runc-v2 ctr)
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
missing=0
for b in "${bins[@]}"; do [ -x "$dir/$b" ] || missing=1; done
if [ "$missing" = 0 ]; then
  log "cached: containerd $CONTAINERD_VERSION in $dir"
else
  log "building containerd $CONTAINERD_VERSION (cold: a few minutes) in $dir/src"
  start=$SECONDS
  src="$dir/src"
  rm -rf "$src"; mkdir -p "$src"
  GO_DIRECTIVE=$(go env GOVERSION | sed -E 's/^go([0-9]+\.[0-9]+(\.[0-9]+)?).*/\1/')
  printf 'module kltest.invalid/containerd\n\ngo %s\n' "$GO_DIRECTIVE" >"$src/go.mod"
  (cd "$src" && go get "github.com/containerd/containerd/v2@$CONTAINERD_VERSION")
  out="$dir/.build.$$"
  rm -rf "$out"; mkdir -p "$out"
  # shellcheck disable=SC2086 # PKGS is a list
  (cd "$src" && go build -trimpath -o "$out/" -ldflags "$LDFLAGS" $PKGS) || { rm -rf "$out"; exit 1; }
  for b in "${bins[@]}"; do mv "$out/$b" "$dir/$b"; done
  rm -rf "$out"
  log "built containerd $CONTAINERD_VERSION in $((SECONDS - start)) s"
fi
exec 9>&-
echo "containerd: $("$dir/containerd" --version 2>&1 | head -1)"
echo "CONTAINERD_VERSION=$CONTAINERD_VERSION"
echo "CONTAINERD_DIR=$dir"
