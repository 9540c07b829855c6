// Package bench holds kernelet's benchmarks. Each measures kernelet against
// a baseline in the same run and prints the ratio, because these machines
// are noisy: no absolute timing is ever asserted. `make bench` runs them for
// real; `make test` runs each once (-benchtime=1x) as a smoke test.
package bench
