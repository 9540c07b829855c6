package bench

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The density benchmark's measurements and report: API server request
// counts, the agents' pod start SLI histogram, profiles, the table.

// apiKey is one series of apiserver_request_total summed over its other
// labels.
type apiKey struct{ verb, resource, subresource string }

func (k apiKey) String() string {
	if k.subresource != "" {
		return k.verb + " " + k.resource + "/" + k.subresource
	}
	return k.verb + " " + k.resource
}

// scrapeRequests reads apiserver_request_total from the API server's
// /metrics, by verb, resource and subresource (non-resource requests left
// out).
func scrapeRequests(ctx context.Context, admin kubernetes.Interface) (map[apiKey]float64, error) {
	raw, err := admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("apiserver /metrics: %w", err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("apiserver /metrics: %w", err)
	}
	out := map[apiKey]float64{}
	if fam := fams["apiserver_request_total"]; fam != nil {
		for _, m := range fam.GetMetric() {
			l := labels(m)
			if l["resource"] == "" {
				continue
			}
			out[apiKey{l["verb"], l["resource"], l["subresource"]}] += m.GetCounter().GetValue()
		}
	}
	return out, nil
}

// subtractRequests is the API server's delta (after - before) less the
// benchmark's own requests over the same window (ownAfter - ownBefore).
func subtractRequests(after, before, ownAfter, ownBefore map[apiKey]float64) map[apiKey]float64 {
	out := map[apiKey]float64{}
	for k, v := range after {
		if d := v - before[k] - (ownAfter[k] - ownBefore[k]); d > 0 {
			out[k] = d
		}
	}
	return out
}

// requestCounter counts the benchmark's own requests to the API server,
// classified as the API server's metrics label them.
type requestCounter struct {
	mu sync.Mutex
	n  map[apiKey]float64
}

func (c *requestCounter) client(b *testing.B, cfg *rest.Config) kubernetes.Interface {
	b.Helper()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if k, ok := classifyRequest(r); ok {
				c.mu.Lock()
				if c.n == nil {
					c.n = map[apiKey]float64{}
				}
				c.n[k]++
				c.mu.Unlock()
			}
			return rt.RoundTrip(r)
		})
	})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

func (c *requestCounter) snapshot() map[apiKey]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// classifyRequest names a request to /api/v1 or /apis/<group>/<version>
// as the API server's request metrics do: verb (LIST, WATCH and GET for
// reads), resource and subresource; false for a non-resource request.
func classifyRequest(r *http.Request) (apiKey, bool) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return apiKey{}, false
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) != 2 {
		parts = parts[2:] // a namespaced resource (not the namespace itself)
	}
	if len(parts) == 0 {
		return apiKey{}, false
	}
	k := apiKey{resource: parts[0]}
	named := len(parts) >= 2
	if len(parts) >= 3 {
		k.subresource = parts[2]
	}
	switch r.Method {
	case http.MethodPost:
		k.verb = "POST"
	case http.MethodPut:
		k.verb = "PUT"
	case http.MethodPatch:
		k.verb = "PATCH"
	case http.MethodDelete:
		k.verb = "DELETE"
		if !named {
			k.verb = "DELETECOLLECTION"
		}
	default:
		switch {
		case r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1":
			k.verb = "WATCH"
		case named:
			k.verb = "GET"
		default:
			k.verb = "LIST"
		}
	}
	return k, true
}

// histogram is a Prometheus histogram's cumulative buckets.
type histogram struct {
	bounds []float64 // upper bounds, rising, +Inf last
	counts []float64 // cumulative
	count  float64
}

func (h histogram) sub(o histogram) histogram {
	out := histogram{bounds: h.bounds, counts: slices.Clone(h.counts), count: h.count - o.count}
	if len(o.counts) == len(h.counts) {
		for i := range out.counts {
			out.counts[i] -= o.counts[i]
		}
	}
	return out
}

// quantile is PromQL's histogram_quantile: linear interpolation within
// the bucket holding rank q·count (the lowest bucket from 0); NaN without
// observations.
func (h histogram) quantile(q float64) float64 {
	if h.count <= 0 || len(h.bounds) < 2 {
		return math.NaN()
	}
	rank := q * h.count
	i := 0
	for i < len(h.counts)-1 && h.counts[i] < rank {
		i++
	}
	if math.IsInf(h.bounds[i], 1) {
		return h.bounds[i-1]
	}
	lo, below := 0.0, 0.0
	if i > 0 {
		lo, below = h.bounds[i-1], h.counts[i-1]
	}
	in := h.counts[i] - below
	if in <= 0 {
		return h.bounds[i]
	}
	return lo + (h.bounds[i]-lo)*(rank-below)/in
}

// scrapeMetrics reads the agent's /metrics (its HTTPS port, anonymous).
func (a *nodeAgent) scrapeMetrics(b *testing.B) map[string]*dto.MetricFamily {
	b.Helper()
	body, err := a.httpsGet(b.Context(), "/metrics")
	if err != nil {
		b.Fatalf("%s /metrics: %v", a.name, err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		b.Fatalf("%s /metrics: %v", a.name, err)
	}
	return fams
}

// scrapeSLI reads kubelet_pod_start_sli_duration_seconds from the agent's
// /metrics.
func (a *nodeAgent) scrapeSLI(b *testing.B) histogram {
	b.Helper()
	var h histogram
	fam := a.scrapeMetrics(b)["kubelet_pod_start_sli_duration_seconds"]
	if fam == nil || len(fam.GetMetric()) == 0 {
		return h
	}
	// One series (kubelet's has no labels): sum them all the same.
	for i, m := range fam.GetMetric() {
		hg := m.GetHistogram()
		h.count += float64(hg.GetSampleCount())
		for j, bk := range hg.GetBucket() {
			if i == 0 {
				h.bounds = append(h.bounds, bk.GetUpperBound())
				h.counts = append(h.counts, 0)
			}
			h.counts[j] += float64(bk.GetCumulativeCount())
		}
	}
	h.bounds = append(h.bounds, math.Inf(1))
	h.counts = append(h.counts, h.count)
	return h
}

// scrapeCRI reads kubelet_runtime_operations_total (both agents count
// their CRI calls in it, by operation_type) from the agent's /metrics.
func (a *nodeAgent) scrapeCRI(b *testing.B) map[string]float64 {
	b.Helper()
	out := map[string]float64{}
	if fam := a.scrapeMetrics(b)["kubelet_runtime_operations_total"]; fam != nil {
		for _, m := range fam.GetMetric() {
			out[labels(m)["operation_type"]] += m.GetCounter().GetValue()
		}
	}
	return out
}

func (a *nodeAgent) httpsGet(ctx context.Context, path string) ([]byte, error) {
	if a.remote != nil {
		return a.remote.get(ctx, path)
	}
	return httpsGet(ctx, &http.Transport{}, fmt.Sprintf("https://127.0.0.1:%d%s", a.securePort, path))
}

// httpsGet GETs url through tr (its server certificate unverified) and
// fails on a status other than 200.
func httpsGet(ctx context.Context, tr *http.Transport, url string) ([]byte, error) {
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	// Long enough for a profile over the whole steady phase.
	hc := &http.Client{Timeout: 10 * time.Minute, Transport: tr}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: HTTP %d: %.200s", url, resp.StatusCode, body)
	}
	return body, err
}

// profile saves the agent's CPU, block and allocation profiles over the
// next secs seconds into dir (nothing when dir is empty); the returned
// func waits for them.
func (a *nodeAgent) profile(b *testing.B, dir, label string, secs int) func() {
	b.Helper()
	if dir == "" {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, kind := range []string{"profile", "block", "allocs"} {
		wg.Go(func() {
			body, err := a.httpsGet(b.Context(), fmt.Sprintf("/debug/pprof/%s?seconds=%d", kind, secs))
			if err != nil {
				b.Errorf("%s pprof %s: %v", a.name, kind, err)
				return
			}
			f := filepath.Join(dir, fmt.Sprintf("%s-%s-%s.pprof", a.tag, label, kind))
			if err := os.WriteFile(f, body, 0o644); err != nil {
				b.Error(err)
				return
			}
			b.Logf("%s: %s profile of %s over %d s: %s", a.name, kind, label, secs, f)
		})
	}
	return wg.Wait
}

// latencies are the durations from(p) → to(p) of the pods that have both.
func latencies(pods []*densityPod, from, to func(*densityPod) time.Time) []time.Duration {
	var out []time.Duration
	for _, p := range pods {
		if f, t := from(p), to(p); !f.IsZero() && !t.IsZero() {
			out = append(out, t.Sub(f))
		}
	}
	return out
}

// densityMetric is one row of the table: a value per agent, lower is
// better.
type densityMetric struct {
	name string
	vals func(*densityRun) []float64 // p50, p90, p99 or a single value
	unit string
}

var densityQuantiles = []float64{0.5, 0.9, 0.99}

func phaseLatency(j int, from, to func(*densityPod) time.Time) func(*densityRun) []float64 {
	return func(r *densityRun) []float64 {
		ds := latencies(r.phases[j].pods, from, to)
		var out []float64
		for _, q := range densityQuantiles {
			out = append(out, percentile(ds, q).Seconds())
		}
		return out
	}
}

func (r *densityRun) phaseNames() []string {
	var out []string
	for _, ph := range r.phases {
		out = append(out, ph.name)
	}
	return out
}

// densityMetrics are the table's rows for runs with these phases.
//
// keys are the API request series and ops the CRI operations to list
// (nil: none).
func densityMetrics(phases []string, keys []apiKey, ops []string) []densityMetric {
	created := func(p *densityPod) time.Time { return p.created }
	var ms []densityMetric
	for j, name := range phases {
		ms = append(ms,
			densityMetric{name + ": create → Running p50/p90/p99", phaseLatency(j, created, func(p *densityPod) time.Time { return p.running }), "s"},
			densityMetric{name + ": create → Ready p50/p90/p99", phaseLatency(j, created, func(p *densityPod) time.Time { return p.ready }), "s"},
			densityMetric{name + ": pod_start_sli p50/p90/p99", func(r *densityRun) []float64 {
				h := r.phases[j].sli
				return []float64{h.quantile(0.5), h.quantile(0.9), h.quantile(0.99)}
			}, "s"},
			densityMetric{name + ": delete → gone p50/p90/p99", phaseLatency(j, func(p *densityPod) time.Time { return p.deleted }, func(p *densityPod) time.Time { return p.gone }), "s"},
			densityMetric{name + ": agent CPU", func(r *densityRun) []float64 { return []float64{r.phases[j].cpu.Seconds()} }, "s"},
		)
		if strings.HasPrefix(name, "burst ") {
			ms = append(ms,
				densityMetric{name + ": machine CPU while starting (every process)", func(r *densityRun) []float64 {
					return []float64{r.phases[j].startBusy.Seconds()}
				}, "s"},
				densityMetric{name + ": machine busy while starting", func(r *densityRun) []float64 {
					ph := r.phases[j]
					return []float64{100 * ph.startBusy.Seconds() / max(ph.starting.Seconds()*float64(ph.cores), 1e-9)}
				}, "%"})
		}
	}
	ms = append(ms,
		densityMetric{"whole run: agent CPU", func(r *densityRun) []float64 { return []float64{r.cpu.Seconds()} }, "s"},
		densityMetric{"whole run: peak RSS (VmHWM)", func(r *densityRun) []float64 { return []float64{mib(r.peakRSS)} }, "MiB"},
		densityMetric{"API requests per pod", func(r *densityRun) []float64 {
			s := 0.0
			for _, v := range r.api {
				s += v
			}
			return []float64{s / float64(max(r.pods, 1))}
		}, ""},
	)
	for _, k := range keys {
		ms = append(ms, densityMetric{"  " + k.String() + " per pod", func(r *densityRun) []float64 {
			return []float64{r.api[k] / float64(max(r.pods, 1))}
		}, ""})
	}
	if ops == nil {
		return ms
	}
	ms = append(ms, densityMetric{"CRI operations per pod", func(r *densityRun) []float64 {
		s := 0.0
		for _, v := range r.cri {
			s += v
		}
		return []float64{s / float64(max(r.pods, 1))}
	}, ""})
	for _, op := range ops {
		ms = append(ms, densityMetric{"  " + op + " per pod", func(r *densityRun) []float64 {
			return []float64{r.cri[op] / float64(max(r.pods, 1))}
		}, ""})
	}
	return ms
}

// apiKeys are the request series of any of the runs, the most frequent
// first.
func apiKeys(runs []*densityRun) []apiKey {
	return frequent(runs, func(r *densityRun) map[apiKey]float64 { return r.api }, apiKey.String)
}

// criOps are the CRI operation types of any of the runs, the most
// frequent first.
func criOps(runs []*densityRun) []string {
	return frequent(runs, func(r *densityRun) map[string]float64 { return r.cri }, func(s string) string { return s })
}

// frequent are the keys of the runs' counts (of) whose count per pod is
// at least 0.005 in the runs together, the most frequent first, then by
// name.
func frequent[K comparable](runs []*densityRun, of func(*densityRun) map[K]float64, name func(K) string) []K {
	sum := map[K]float64{}
	for _, r := range runs {
		for k, v := range of(r) {
			sum[k] += v / float64(max(r.pods, 1))
		}
	}
	keys := slices.Collect(maps.Keys(sum))
	slices.SortFunc(keys, func(a, b K) int {
		if sum[a] != sum[b] {
			if sum[a] > sum[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(name(a), name(b))
	})
	return slices.DeleteFunc(keys, func(k K) bool { return sum[k] < 0.005 })
}

func formatVals(vs []float64, unit string) string {
	var parts []string
	for _, v := range vs {
		if math.IsNaN(v) {
			parts = append(parts, "–")
		} else {
			parts = append(parts, fmt.Sprintf("%.2f", v))
		}
	}
	return strings.Join(parts, " / ") + unit
}

func ratios(k, l []float64) []float64 {
	out := make([]float64, len(k))
	for i := range k {
		out[i] = k[i] / l[i]
		if l[i] == 0 {
			out[i] = math.NaN()
		}
	}
	return out
}

// densityTable is one run's table: a column per agent and, with both, the
// ratio kernelet/kubelet.
func densityTable(pair []*densityRun) string {
	var sb strings.Builder
	sb.WriteString("| metric |")
	for _, r := range pair {
		fmt.Fprintf(&sb, " %s (%d pods) |", r.agent, r.pods)
	}
	both := len(pair) == 2
	if both {
		sb.WriteString(" kernelet/kubelet |")
	}
	sb.WriteString("\n|---|" + strings.Repeat("---:|", len(pair)))
	if both {
		sb.WriteString("---:|")
	}
	sb.WriteString("\n")
	for _, m := range densityMetrics(pair[0].phaseNames(), apiKeys(pair), criOps(pair)) {
		fmt.Fprintf(&sb, "| %s |", m.name)
		for _, r := range pair {
			fmt.Fprintf(&sb, " %s |", formatVals(m.vals(r), m.unit))
		}
		if both {
			fmt.Fprintf(&sb, " %s |", formatVals(ratios(m.vals(pair[1]), m.vals(pair[0])), "×"))
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// densityVariance lists the ratios of every run for the main metrics.
func densityVariance(all [][]*densityRun) string {
	var sb strings.Builder
	for _, m := range densityMetrics(all[0][0].phaseNames(), nil, nil) {
		fmt.Fprintf(&sb, "%s:", m.name)
		for _, pair := range all {
			fmt.Fprintf(&sb, "  %s", formatVals(ratios(m.vals(pair[1]), m.vals(pair[0])), "×"))
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

func (r *densityRun) summary() string {
	var parts []string
	for _, ph := range r.phases {
		parts = append(parts, fmt.Sprintf("%s in %v (CPU %v)", ph.name, ph.took.Round(time.Millisecond), ph.cpu))
	}
	return fmt.Sprintf("%s; whole run CPU %v, peak RSS %.1f MiB", strings.Join(parts, ", "), r.cpu, mib(r.peakRSS))
}

// kerneletRevision is the checkout's short commit (with "+dirty").
func kerneletRevision() string {
	out, err := exec.Command("git", "-C", "..", "describe", "--always", "--dirty=+dirty").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

// densityMachine is the CPU count and the load average now.
func densityMachine() string {
	load, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(load))
	if len(f) >= 3 {
		return fmt.Sprintf("%d CPUs, load %s %s %s", runtime.NumCPU(), f[0], f[1], f[2])
	}
	return fmt.Sprintf("%d CPUs", runtime.NumCPU())
}
