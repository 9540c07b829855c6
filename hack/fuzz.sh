#!/usr/bin/env bash
# make fuzz: every Go fuzz target of the module (func FuzzXxx in a _test.go
# file), fuzzed with `go test -fuzz`, seeded from its f.Add seeds and its
# committed corpus under testdata/fuzz/. A crash fails the run; Go writes
# the failing input to <pkg>/testdata/fuzz/<target>/ — commit it with the
# fix, as a seed. Prints one line per target with its executions.
#
# Budgets are counts of executions (-fuzztime Nx), sized to about 20 s per
# target on a loaded 2-core machine: a duration budget races Go 1.26's fuzz
# coordinator at its deadline and fails with a bare "context deadline
# exceeded" (golang/go#75804, fixed in Go 1.27), which a count cannot.
# FUZZTIME (a count "Nx" or a duration) overrides every budget;
# FUZZ_PERCENT scales the counts (make test runs half of them, for CI time).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-}
FUZZ_PERCENT=${FUZZ_PERCENT:-100}
# budget is the execution count of a target (<package dir>/<name>), scaled
# by FUZZ_PERCENT.
budget() {
  local n
  n=$(fullBudget "$1")
  echo "$(( ${n%x} * FUZZ_PERCENT / 100 ))x"
}

# fullBudget is a target's count at 100 %: slow targets (YAML/JSON decoding,
# the kubelet API parsers) get fewer executions than the line parsers.
fullBudget() {
  case "$1" in
    agent/config/FuzzParse) echo 15000x ;;           # KubeletConfiguration YAML
    agent/sources/FuzzDecode) echo 150000x ;;        # pod manifests
    agent/logs/FuzzParseOptions) echo 100000x ;;     # /containerLogs queries
    agent/streaming/FuzzParseRequest) echo 60000x ;; # exec/attach/port-forward paths
    eviction/FuzzParseThresholds) echo 100000x ;;    # eviction maps (~2000/s: 400000 took 3 min)
    *) echo 250000x ;;                               # line and field parsers
  esac
}
mapfile -t targets < <(grep -rl --include='*_test.go' -E '^func Fuzz[A-Z0-9_a-z]*\(f \*testing\.F\)' . |
  grep -v '^./\(bin\|test\)/' | sort |
  while read -r f; do
    dir=$(dirname "$f")
    grep -oE '^func Fuzz[A-Za-z0-9_]*' "$f" | sed "s|^func |$dir |"
  done)
echo "== fuzz: ${#targets[@]} targets, ${FUZZTIME:-a count of executions (${FUZZ_PERCENT} % of the budget)} each"
rc=0
summary=()
for t in "${targets[@]}"; do
  dir=${t% *} name=${t#* }
  log=$(mktemp)
  if "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "${FUZZTIME:-$(budget "${dir#./}/$name")}" "$dir" >"$log" 2>&1; then
    status=ok
  else
    status=FAIL rc=1
    cat "$log"
  fi
  last=$(grep -E '^fuzz: elapsed' "$log" | tail -1 | sed -E 's/^fuzz: //')
  summary+=("$(printf '%-4s %-24s %-30s %s' "$status" "${dir#./}" "$name" "${last:-no fuzzing output}")")
  echo "${summary[-1]}"
  rm -f "$log"
done
[ $rc -eq 0 ] && echo "== fuzz: all ${#targets[@]} targets passed" || echo "== fuzz: failures above; the failing inputs are under testdata/fuzz/"
exit $rc
