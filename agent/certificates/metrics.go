package certificates

import (
	"crypto/tls"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Buckets of kubelet_certificate_manager_server_rotation_seconds (kubelet's:
// 1 minute, 1 hour, 4 hours, 1 day, 1 week, 1 month, 3 and 6 months, 1 and
// 4 years).
var rotationAgeBuckets = []float64{60, 3600, 14400, 86400, 604800, 2592000, 7776000, 15552000, 31104000, 124416000}

// ClientMetrics are the client certificate's metrics as kubelet serves
// them with rotateCertificates: kubelet_certificate_manager_client_ttl_seconds
// (seconds until the current certificate expires, negative once expired,
// +Inf without one) and kubelet_certificate_manager_client_expiration_renew_errors
// (renewals that failed). r (nil: descriptions only) counts its failed
// renewals into the counter; call before r runs.
func ClientMetrics(r *Rotator) []prometheus.Collector {
	failures := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_certificate_manager_client_expiration_renew_errors", Help: "Counter of certificate renewal errors."})
	ttl := ttlGauge("kubelet_certificate_manager_client_ttl_seconds", "Gauge of the TTL (time-to-live) of the Kubelet's client certificate. "+
		"The value is in seconds until certificate expiry (negative if already expired). "+
		"If client certificate is invalid or unused, the value will be +INF.", r)
	if r != nil {
		r.renewFailures = failures
	}
	return []prometheus.Collector{ttl, failures}
}

// ServingMetrics are the serving certificate's metrics as kubelet serves
// them with serverTLSBootstrap: kubelet_certificate_manager_server_ttl_seconds,
// kubelet_server_expiration_renew_errors and
// kubelet_certificate_manager_server_rotation_seconds (how long, from its
// NotBefore, each replaced certificate lived). r as for ClientMetrics.
func ServingMetrics(r *Rotator) []prometheus.Collector {
	failures := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_server_expiration_renew_errors", Help: "Counter of certificate renewal errors."})
	age := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kubelet_certificate_manager_server_rotation_seconds",
		Help: "Histogram of the number of seconds the previous certificate lived before being rotated.", Buckets: rotationAgeBuckets})
	ttl := ttlGauge("kubelet_certificate_manager_server_ttl_seconds", "Gauge of the shortest TTL (time-to-live) of "+
		"the Kubelet's serving certificate. The value is in seconds until certificate expiry (negative if already expired). "+
		"If serving certificate is invalid or unused, the value will be +INF.", r)
	if r != nil {
		r.renewFailures, r.rotationAge = failures, age
	}
	return []prometheus.Collector{ttl, failures, age}
}

func ttlGauge(name, help string, r *Rotator) prometheus.GaugeFunc {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
		if r == nil {
			return math.Inf(1)
		}
		return TTLSeconds(time.Now(), r.Current())
	})
}

// TTLSeconds is kubelet's TTL gauge: whole seconds from now until c
// expires (negative once it has), +Inf without a certificate.
func TTLSeconds(now time.Time, c *tls.Certificate) float64 {
	if c == nil || c.Leaf == nil {
		return math.Inf(1)
	}
	return math.Trunc(c.Leaf.NotAfter.Sub(now).Seconds())
}

// MetricsDescription describes the metrics of both rotators (for listings
// of what the agent may serve; it serves them with rotation only, as
// kubelet).
func MetricsDescription() prometheus.Collector {
	reg := prometheus.NewRegistry()
	reg.MustRegister(append(ClientMetrics(nil), ServingMetrics(nil)...)...)
	return reg
}
