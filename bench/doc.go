// Package bench holds kernelet's benchmarks. Each measures kernelet against
// a baseline in the same run and prints the ratio, because these machines
// are noisy: no absolute timing is ever asserted. `make bench` runs them for
// real; `make test` runs each once (-benchtime=1x) as a smoke test, except
// the long ones that need root, real components or the real kubelet
// (Footprint, ObjectStrategies, Probes, CadvisorScrapeKubelet, Eviction,
// EventedPLEG, Density), which have make targets of their own
// (bench-footprint, bench-objects, bench-probes, bench-scrape-kubelet,
// bench-eviction, bench-pleg, bench-density).
package bench
