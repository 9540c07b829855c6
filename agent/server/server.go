package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
)

// HealthzHandler serves /healthz and /healthz/<check>. Healthy: 200 "ok"
// (with ?verbose, one "[+]name ok" line per check). Unhealthy: 500 listing
// every check, "[-]name failed: reason" for the failing ones.
func HealthzHandler(checks []HealthCheck) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		serveChecks(w, r, checks)
	})
	for _, c := range checks {
		mux.HandleFunc("/healthz/"+c.Name, func(w http.ResponseWriter, r *http.Request) {
			serveChecks(w, r, []HealthCheck{c})
		})
	}
	return mux
}

func serveChecks(w http.ResponseWriter, r *http.Request, checks []HealthCheck) {
	var b strings.Builder
	failed := false
	for _, c := range checks {
		if err := c.Check(r); err != nil {
			failed = true
			fmt.Fprintf(&b, "[-]%s failed: %v\n", c.Name, err)
			klog.FromContext(r.Context()).V(2).Info("Health check failed", "check", c.Name, "err", err)
		} else {
			fmt.Fprintf(&b, "[+]%s ok\n", c.Name)
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if failed {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "%shealthz check failed\n", b.String())
		return
	}
	if _, verbose := r.URL.Query()["verbose"]; verbose {
		fmt.Fprintf(w, "%shealthz check passed\n", b.String())
		return
	}
	fmt.Fprint(w, "ok")
}

// Handler serves the agent API: /healthz, /metrics, /configz, /status, /pods.
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
