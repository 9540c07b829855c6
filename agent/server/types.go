package server

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

// HealthCheck is one named check of /healthz. Check returns nil when healthy.
type HealthCheck struct {
	Name  string
	Check func(r *http.Request) error
}

// Options is what the server serves.
type Options struct {
	// Checks are the /healthz checks, in the order they are reported.
	Checks []HealthCheck
	// Gatherer provides /metrics.
	Gatherer prometheus.Gatherer
	// Configz returns the object served at /configz (nil: not served).
	Configz func() any
	// Status returns the object served at /status (nil: not served).
	Status func(ctx context.Context) any
	// Pods returns the object served at /pods, a v1 PodList (nil: not
	// served).
	Pods func(ctx context.Context) any
	// Dashboard serves /dashboard/ and below (agent/server/dashboard; nil:
	// not served).
	Dashboard http.Handler
}
