#!/usr/bin/env bash
# Builds metrics-server from the Go module proxy into kernelet's build cache,
# outside the repository, keyed by version:
#
#   $CACHE/metrics-server/<METRICS_SERVER_VERSION>/metrics-server
#
# with CACHE=${KERNELET_CACHE:-$HOME/.cache/kernelet} ($XDG_CACHE_HOME is
# honoured like Go's os.UserCacheDir, so this matches env.CacheDir()). A
# cached binary is not rebuilt (the run only prints what it found). Parallel
# runs serialise on a flock in the version directory.
#
# Environment:
#   METRICS_SERVER_VERSION  sigs.k8s.io/metrics-server release (default
#                           v0.9.0: its k8s.io deps are v0.36.2, the closest
#                           release to the v0.37 kernelet uses)
#
# The scratch module lives in the cache dir; go runs there with GOWORK=off,
# so the build never sees the repository's go.mod. metrics-server's go.mod
# has no replace directives, so requiring it from a scratch module builds
# it with its own pinned dependencies (minimal version selection).
# Prints the version and, last, one machine-readable line:
#   METRICS_SERVER=<path>
set -euo pipefail

METRICS_SERVER_VERSION=${METRICS_SERVER_VERSION:-v0.9.0}
CACHE=${KERNELET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kernelet}

export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=local
unset GOOS GOARCH

log() { echo "hack/metrics-server/build.sh: $*" >&2; }

command -v go >/dev/null || { log "the go toolchain is required"; exit 1; }
command -v flock >/dev/null || { log "flock (util-linux) is required"; exit 1; }

GO_DIRECTIVE=$(go env GOVERSION | sed -E 's/^go([0-9]+\.[0-9]+(\.[0-9]+)?).*/\1/')
dir="$CACHE/metrics-server/$METRICS_SERVER_VERSION"
BIN="$dir/metrics-server"

mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
if [ -x "$BIN" ]; then
  log "cached: metrics-server $METRICS_SERVER_VERSION in $dir"
else
  log "building metrics-server $METRICS_SERVER_VERSION in $dir/src"
  start=$SECONDS src="$dir/src"
  mkdir -p "$src"
  printf 'module kltest.invalid/metrics-server\n\ngo %s\n' "$GO_DIRECTIVE" >"$src/go.mod"
  rm -f "$src/go.sum"
  (cd "$src" && go get "sigs.k8s.io/metrics-server@$METRICS_SERVER_VERSION")
  pkg=k8s.io/client-go/pkg/version # metrics-server's --version reads client-go's
  (cd "$src" && go build -trimpath -o "$BIN.tmp" \
    -ldflags "-s -w -X $pkg.gitVersion=$METRICS_SERVER_VERSION -X $pkg.gitTreeState=clean" \
    sigs.k8s.io/metrics-server/cmd/metrics-server) || { rm -f "$BIN.tmp"; exit 1; }
  mv "$BIN.tmp" "$BIN"
  log "built metrics-server $METRICS_SERVER_VERSION in $((SECONDS - start)) s"
fi
exec 9>&-

echo "metrics-server: $("$BIN" --version 2>&1 | head -1)"
echo "METRICS_SERVER=$BIN"
