package kubeclient

import (
	"context"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"

	"github.com/kernelet/kernelet/internal/promreg"
)

// restMetrics are client-go's rest_client_* as kubelet serves them, fed
// through client-go's metrics hooks (k8s.io/client-go/tools/metrics) by
// kernelet's own adapters rather than component-base's legacy registry.
type restMetrics struct {
	duration, rateLimiter, requestSize, responseSize *prometheus.HistogramVec
	dns                                              *prometheus.HistogramVec
	requests, retries, execCalls, transportCalls     *prometheus.CounterVec
	transportCache                                   prometheus.Gauge
}

// Buckets of kubelet's rest_client_* histograms.
var (
	latencyBuckets = []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0}
	dnsBuckets     = []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0}
	sizeBuckets    = []float64{64, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216}
)

func newRestMetrics() *restMetrics {
	verbHost := []string{"verb", "host"}
	histogram := func(name, help string, buckets []float64, labels []string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	return &restMetrics{
		duration: histogram("rest_client_request_duration_seconds", "Request latency in seconds. Broken down by verb, and host.",
			latencyBuckets, verbHost),
		rateLimiter: histogram("rest_client_rate_limiter_duration_seconds",
			"Client side rate limiter latency in seconds. Broken down by verb, and host.", latencyBuckets, verbHost),
		requestSize: histogram("rest_client_request_size_bytes", "Request size in bytes. Broken down by verb and host.",
			sizeBuckets, verbHost),
		responseSize: histogram("rest_client_response_size_bytes", "Response size in bytes. Broken down by verb and host.",
			sizeBuckets, verbHost),
		dns: histogram("rest_client_dns_resolution_duration_seconds", "DNS resolver latency in seconds. Broken down by host.",
			dnsBuckets, []string{"host"}),
		requests: counter("rest_client_requests_total", "Number of HTTP requests, partitioned by status code, method, and host.",
			"code", "method", "host"),
		retries: counter("rest_client_request_retries_total", "Number of request retries, partitioned by status code, verb, and host.",
			"code", "verb", "host"),
		execCalls: counter("rest_client_exec_plugin_call_total", "Number of calls to an exec plugin, partitioned by the type of "+
			"event encountered (no_error, plugin_execution_error, plugin_not_found_error, client_internal_error) and an optional "+
			"exit code. The exit code will be set to 0 if and only if the plugin call was successful.", "code", "call_status"),
		transportCalls: counter("rest_client_transport_create_calls_total", "Number of calls to get a new transport, partitioned by "+
			"the result of the operation hit: obtained from the cache, miss: created and added to the cache, miss-gc: recreated "+
			"and added back to the cache after being garbage collected, uncacheable: created and not cached", "result"),
		transportCache: prometheus.NewGauge(prometheus.GaugeOpts{Name: "rest_client_transport_cache_entries",
			Help: "Number of transport entries in the internal cache."}),
	}
}

// hooks are m as client-go's metrics hooks.
func (m *restMetrics) hooks() clientmetrics.RegisterOpts {
	return clientmetrics.RegisterOpts{
		RequestLatency:        latency{m.duration},
		RateLimiterLatency:    latency{m.rateLimiter},
		ResolverLatency:       resolverLatency{m.dns},
		RequestSize:           size{m.requestSize},
		ResponseSize:          size{m.responseSize},
		RequestResult:         result{m.requests},
		RequestRetry:          retry{m.retries},
		ExecPluginCalls:       execCalls{m.execCalls},
		TransportCacheEntries: transportCache{m.transportCache},
		TransportCreateCalls:  transportCalls{m.transportCalls},
	}
}

// sharedRestMetrics are the process's rest_client_* metrics: client-go's
// hooks are process-wide and set once, so every registry (one per agent)
// registers the same collectors.
var sharedRestMetrics = sync.OnceValue(func() *restMetrics {
	m := newRestMetrics()
	clientmetrics.Register(m.hooks())
	return m
})

// RegisterMetrics registers client-go's rest_client_* metrics of the
// agent's API server requests with reg, as kubelet serves them on
// /metrics.
func RegisterMetrics(reg prometheus.Registerer) error {
	m := sharedRestMetrics()
	return promreg.Register(reg, m.duration, m.rateLimiter, m.requestSize, m.responseSize, m.dns, m.requests, m.retries,
		m.execCalls, m.transportCalls, m.transportCache)
}

type latency struct{ h *prometheus.HistogramVec }

func (l latency) Observe(_ context.Context, verb string, u url.URL, d time.Duration) {
	l.h.WithLabelValues(verb, u.Host).Observe(d.Seconds())
}

type resolverLatency struct{ h *prometheus.HistogramVec }

func (l resolverLatency) Observe(_ context.Context, host string, d time.Duration) {
	l.h.WithLabelValues(host).Observe(d.Seconds())
}

type size struct{ h *prometheus.HistogramVec }

func (s size) Observe(_ context.Context, verb, host string, bytes float64) {
	s.h.WithLabelValues(verb, host).Observe(bytes)
}

type result struct{ c *prometheus.CounterVec }

func (r result) Increment(_ context.Context, code, method, host string) {
	r.c.WithLabelValues(code, method, host).Inc()
}

type retry struct{ c *prometheus.CounterVec }

func (r retry) IncrementRetry(_ context.Context, code, verb, host string) {
	r.c.WithLabelValues(code, verb, host).Inc()
}

type execCalls struct{ c *prometheus.CounterVec }

func (e execCalls) Increment(exitCode int, callStatus string) {
	e.c.WithLabelValues(strconv.Itoa(exitCode), callStatus).Inc()
}

type transportCache struct{ g prometheus.Gauge }

func (t transportCache) Observe(entries int) { t.g.Set(float64(entries)) }

type transportCalls struct{ c *prometheus.CounterVec }

func (t transportCalls) Increment(result string) { t.c.WithLabelValues(result).Inc() }
