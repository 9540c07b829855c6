package dra

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// AnyDriver is the driver_name of dra_resource_claims_in_use that counts
// every prepared claim (kubelet's).
const AnyDriver = "<any>"

// Metrics are kubelet's DRA metrics (no kubelet_ prefix, as kubelet's):
// dra_operations_duration_seconds{operation_name,is_error} (a pod's
// PrepareResources and UnprepareResources),
// dra_grpc_operations_duration_seconds{driver_name,method_name,grpc_status_code}
// (each call to a plugin) and dra_resource_claims_in_use{driver_name}
// (prepared claims by driver, AnyDriver for all).
type Metrics struct {
	ops, grpc *prometheus.HistogramVec
	inUse     *prometheus.Desc

	mu sync.Mutex
	m  *Manager
}

// durationBuckets are kubelet's: 0.1 s to 40 s (the 45 s call timeout).
var durationBuckets = prometheus.ExponentialBucketsRange(.1, 40, 15)

// NewMetrics returns the DRA metrics, not registered.
func NewMetrics() *Metrics {
	return &Metrics{
		ops: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "dra", Name: "operations_duration_seconds",
			Help:    "Latency histogram in seconds for the duration of handling all ResourceClaims referenced by a pod when the pod starts or stops. Identified by the name of the operation (PrepareResources or UnprepareResources) and separated by the success of the operation. The number of failed operations is provided through the histogram's overall count.",
			Buckets: durationBuckets}, []string{"operation_name", "is_error"}),
		grpc: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "dra", Name: "grpc_operations_duration_seconds",
			Help: "Duration in seconds of the DRA gRPC operations", Buckets: durationBuckets}, []string{"driver_name", "method_name", "grpc_status_code"}),
		inUse: prometheus.NewDesc("dra_resource_claims_in_use",
			"The number of ResourceClaims that are currently in use on the node, by driver name (driver_name label value) and across all drivers (special value <any> for driver_name). Note that the sum of all by-driver counts is not the total number of in-use ResourceClaims because the same ResourceClaim might use devices from different drivers. Instead, use the count for the <any> driver_name.",
			[]string{"driver_name"}, nil),
	}
}

// Register registers the metrics with reg.
func (x *Metrics) Register(reg prometheus.Registerer) error {
	if err := reg.Register(x.ops); err != nil {
		return err
	}
	if err := reg.Register(x.grpc); err != nil {
		return err
	}
	return reg.Register(x)
}

// Describe implements prometheus.Collector (the claims in use).
func (x *Metrics) Describe(ch chan<- *prometheus.Desc) { ch <- x.inUse }

// Collect implements prometheus.Collector: the claims the manager has
// prepared, by driver and for AnyDriver (none before a manager uses x).
func (x *Metrics) Collect(ch chan<- prometheus.Metric) {
	x.mu.Lock()
	m := x.m
	x.mu.Unlock()
	if m == nil {
		return
	}
	for driver, n := range m.claimsInUse() {
		ch <- prometheus.MustNewConstMetric(x.inUse, prometheus.GaugeValue, float64(n), driver)
	}
}

// use makes x count m's claims.
func (x *Metrics) use(m *Manager) {
	if x != nil {
		x.mu.Lock()
		x.m = m
		x.mu.Unlock()
	}
}

// operation observes a pod's PrepareResources or UnprepareResources.
func (x *Metrics) operation(name string, start time.Time, err error) {
	if x != nil {
		x.ops.WithLabelValues(name, strconv.FormatBool(err != nil)).Observe(time.Since(start).Seconds())
	}
}

// interceptor observes each gRPC call to driver's plugin.
func (x *Metrics) interceptor(driver string) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		start := time.Now()
		err := invoker(ctx, method, req, reply, cc, opts...)
		if x != nil {
			x.grpc.WithLabelValues(driver, method, status.Code(err).String()).Observe(time.Since(start).Seconds())
		}
		return err
	}
}

// claimsInUse counts the prepared claims by driver and for AnyDriver.
func (m *Manager) claimsInUse() map[string]int {
	m.claimsMu.Lock()
	defer m.claimsMu.Unlock()
	out := map[string]int{AnyDriver: 0}
	for _, ci := range m.claims.claims {
		if !ci.prepared {
			continue
		}
		out[AnyDriver]++
		for d := range ci.DriverState {
			out[d]++
		}
	}
	return out
}
