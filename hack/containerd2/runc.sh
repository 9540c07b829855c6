#!/usr/bin/env bash
# Builds runc from the Go module proxy into kernelet's build cache, outside
# the repository, keyed by version and by the build recipe below:
#
#   $CACHE/runc/<RUNC_VERSION>-<hash of the recipe>/runc
#
# with cgo, the seccomp build tag and libseccomp (hack/deps.sh runc installs
# libseccomp-dev and pkg-config), as runc's own releases. The host's Debian
# runc (1.1.5) has no idmapped mounts, which containerd 2 needs to give a
# pod with `hostUsers: false` its volumes; test/env/containerd runs the
# host's containerd 2 instance with this runc. CACHE=${KERNELET_CACHE:-$HOME/.cache/kernelet}.
# A cached build only prints what it found; parallel runs serialise on a
# flock in that directory. Prints, last, RUNC_VERSION=<version> and
# RUNC_DIR=<dir>.
#
# Environment: RUNC_VERSION (default v1.5.2: the runc that containerd
# v2.4.2 pins in its script/setup/runc-version).
set -euo pipefail

RUNC_VERSION=${RUNC_VERSION:-v1.5.2}
CACHE=${KERNELET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kernelet}
export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=1 GOTOOLCHAIN=local
unset GOOS GOARCH

log() { echo "hack/containerd2/runc.sh: $*" >&2; }
command -v go >/dev/null || { log "the go toolchain is required"; exit 1; }
command -v flock >/dev/null || { log "flock (util-linux) is required"; exit 1; }

# The recipe: what the binary is made of; its hash keys the cache.
LDFLAGS="-s -w -X main.version=${RUNC_VERSION#v} -X main.gitCommit=module-proxy"
RECIPE="CGO_ENABLED=$CGO_ENABLED go build -trimpath -buildmode=pie -tags seccomp -ldflags '$LDFLAGS' github.com/opencontainers/runc"
dir="$CACHE/runc/$RUNC_VERSION-$(echo "$RECIPE" | sha256sum | cut -c1-12)"
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
if [ -x "$dir/runc" ]; then
  log "cached: runc $RUNC_VERSION in $dir"
else
  command -v gcc >/dev/null || { log "gcc is required (cgo)"; exit 1; }
  pkg-config --exists libseccomp 2>/dev/null || { log "libseccomp-dev and pkg-config are required (hack/deps.sh runc)"; exit 1; }
  log "building runc $RUNC_VERSION (cold: a minute or two) in $dir/src"
  start=$SECONDS
  src="$dir/src"
  rm -rf "$src"; mkdir -p "$src"
  GO_DIRECTIVE=$(go env GOVERSION | sed -E 's/^go([0-9]+\.[0-9]+(\.[0-9]+)?).*/\1/')
  printf 'module kltest.invalid/runc\n\ngo %s\n' "$GO_DIRECTIVE" >"$src/go.mod"
  (cd "$src" && go get "github.com/opencontainers/runc@$RUNC_VERSION")
  out="$dir/.runc.$$"
  (cd "$src" && go build -trimpath -buildmode=pie -tags seccomp -o "$out" \
    -ldflags "$LDFLAGS" \
    github.com/opencontainers/runc) || { rm -f "$out"; exit 1; }
  mv "$out" "$dir/runc"
  log "built runc $RUNC_VERSION in $((SECONDS - start)) s"
fi
exec 9>&-
echo "runc: $("$dir/runc" --version 2>&1 | head -1)"
echo "RUNC_VERSION=$RUNC_VERSION"
echo "RUNC_DIR=$dir"
