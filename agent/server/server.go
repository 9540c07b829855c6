package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apiserver/pkg/server/healthz"
)

// HealthzHandler serves /healthz and /healthz/<check> (k8s.io/apiserver's
// healthz, as kubelet).
func HealthzHandler(checks []HealthCheck) http.Handler {
	mux := http.NewServeMux()
	hcs := make([]healthz.HealthChecker, len(checks))
	for i, c := range checks {
		hcs[i] = healthz.NamedCheck(c.Name, c.Check)
	}
	healthz.InstallHandler(mux, hcs...)
	return mux
}

// Handler serves the agent API: /healthz, /metrics, /configz, /status, /pods,
// /dashboard/.
func Handler(o Options) http.Handler {
	mux := http.NewServeMux()
	hz := HealthzHandler(o.Checks)
	mux.Handle("/healthz", hz)
	mux.Handle("/healthz/", hz)
	if o.Gatherer != nil {
		mux.Handle("/metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{}))
	}
	if o.Configz != nil {
		mux.HandleFunc("/configz", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, map[string]any{"kubeletconfig": o.Configz()})
		})
	}
	if o.Status != nil {
		mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, o.Status(r.Context()))
		})
	}
	if o.Pods != nil {
		mux.HandleFunc("/pods", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, o.Pods(r.Context()))
		})
	}
	if o.Dashboard != nil {
		mux.Handle("/dashboard", o.Dashboard)
		mux.Handle("/dashboard/", o.Dashboard)
	}
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// Listener is one bound HTTP endpoint.
type Listener struct {
	Name string
	srv  *http.Server
	ln   net.Listener
}

// Listen binds addr now, so that a port in use is an error at start, not later.
func Listen(ctx context.Context, name, addr string, h http.Handler) (*Listener, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s server: %w", name, err)
	}
	return newListener(ctx, name, ln, h), nil
}

// Addr is the bound address (useful with port 0).
func (l *Listener) Addr() string { return l.ln.Addr().String() }

// Close closes the bound socket of a listener that will not serve.
func (l *Listener) Close() error { return l.ln.Close() }

// Serve serves until ctx is done, then shuts down gracefully, giving
// in-flight requests up to five seconds.
func (l *Listener) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- l.srv.Serve(l.ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("%s server: %w", l.Name, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := l.srv.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("%s server shutdown: %w", l.Name, err)
	}
	return nil
}

// newListener serves h on ln; requests carry ctx's values.
func newListener(ctx context.Context, name string, ln net.Listener, h http.Handler) *Listener {
	return &Listener{
		Name: name,
		ln:   ln,
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			BaseContext:       func(net.Listener) context.Context { return ctx },
		},
	}
}
