package server

import (
	"context"
	"net/http"
	"net/http/pprof"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// KubeletAPI is what the secure and read-only ports serve beyond Options.
type KubeletAPI struct {
	Options
	// RunningPods returns the object served at /runningpods/: a v1
	// PodList of the pods the runtime runs (nil: not served).
	RunningPods func(ctx context.Context) (any, error)
	// ContainerLogs serves /containerLogs/{namespace}/{pod}/{container}.
	ContainerLogs http.Handler
	// Exec, Attach, PortForward and Run serve /exec/, /attach/,
	// /portForward/ and /run/ (each with and without the pod UID).
	Exec, Attach, PortForward, Run http.Handler
	// NodeLogsDir is served below /logs/ ("" : not served).
	NodeLogsDir string
	// NoDebugging is kubelet's enableDebuggingHandlers=false: /exec/,
	// /attach/, /portForward/, /run/, /containerLogs/, /runningpods/,
	// /logs/ and /debug/pprof/ answer 405 "Debug endpoints are disabled."
	NoDebugging bool
	// Profiling serves net/http/pprof below /debug/pprof/ (kubelet's
	// enableProfilingHandler; only with the debugging handlers, as kubelet).
	Profiling bool
	// Cadvisor, Resource and Probes are the gatherers of
	// /metrics/cadvisor, /metrics/resource and /metrics/probes (nil: 501).
	Cadvisor, Resource, Probes prometheus.Gatherer
	// Summary returns the Summary API object of /stats/summary, only CPU
	// and memory when asked (nil: 501).
	Summary func(ctx context.Context, onlyCPUAndMemory bool) (any, error)
}

// notImplemented are kubelet endpoints kernelet does not serve (yet, or
// in this configuration): they answer 501 rather than 404, so that a
// client can tell.
var notImplemented = []string{"/stats/", "/metrics/cadvisor", "/metrics/resource", "/metrics/probes", "/spec/"}

// SecureHandler serves the kubelet API of the secure port (the caller puts
// authentication and authorization in front): /healthz, /metrics,
// /configz, /pods, /runningpods/, /containerLogs/, /exec/, /attach/,
// /portForward/, /run/, /logs/, /stats/summary, /metrics/cadvisor,
// /metrics/resource, /metrics/probes and kernelet's /status; the rest of
// /stats/ and /spec/ answer 501 (so do the others when not given).
func SecureHandler(o KubeletAPI) http.Handler {
	if o.NoDebugging {
		o.RunningPods = nil
	}
	mux := readOnlyMux(o)
	if o.Configz != nil {
		mux.Handle("/configz", configz(o.Configz))
	}
	if o.NoDebugging {
		debuggingDisabled(mux)
		return mux
	}
	if o.Profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	for prefix, h := range map[string]http.Handler{
		"/containerLogs/": o.ContainerLogs,
		"/exec/":          o.Exec,
		"/attach/":        o.Attach,
		"/portForward/":   o.PortForward,
		"/run/":           o.Run,
	} {
		if h != nil {
			mux.Handle(prefix, h)
		}
	}
	if o.NodeLogsDir != "" {
		mux.Handle("/logs/", http.StripPrefix("/logs/", http.FileServer(http.Dir(o.NodeLogsDir))))
	}
	return mux
}

// debuggingPaths are kubelet's debugging handlers.
var debuggingPaths = []string{"/run/", "/exec/", "/attach/", "/portForward/", "/containerLogs/", "/runningpods/", "/debug/pprof/", "/logs/"}

// debuggingDisabled answers kubelet's 405 on the debugging handlers.
func debuggingDisabled(mux *http.ServeMux) {
	for _, p := range debuggingPaths {
		mux.HandleFunc(p, func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "Debug endpoints are disabled.", http.StatusMethodNotAllowed)
		})
	}
}

// ReadOnlyHandler serves the read-only port (plain HTTP, no
// authentication, as kubelet's readOnlyPort): /healthz, /metrics, /pods,
// /runningpods/, /stats/summary, the /metrics/ endpoints and kernelet's
// /status; the 501 endpoints as on the secure port.
func ReadOnlyHandler(o KubeletAPI) http.Handler { return readOnlyMux(o) }

func readOnlyMux(o KubeletAPI) *http.ServeMux {
	mux := http.NewServeMux()
	base := o.Options
	base.Configz = nil
	mux.Handle("/", Handler(base))
	if o.RunningPods != nil {
		mux.HandleFunc("/runningpods/", func(w http.ResponseWriter, r *http.Request) {
			list, err := o.RunningPods(r.Context())
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			writeJSON(w, list)
		})
	}
	served := map[string]http.Handler{}
	for p, g := range map[string]prometheus.Gatherer{"/metrics/cadvisor": o.Cadvisor, "/metrics/resource": o.Resource,
		"/metrics/probes": o.Probes} {
		if g != nil {
			served[p] = promhttp.HandlerFor(g, promhttp.HandlerOpts{})
		}
	}
	if o.Summary != nil {
		served["/stats/summary"] = summaryHandler(o.Summary)
	}
	for p, h := range served {
		mux.Handle(p, h)
	}
	for _, p := range notImplemented {
		if served[p] != nil {
			continue
		}
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, r.URL.Path+" is not implemented by kernelet yet", http.StatusNotImplemented)
		})
	}
	return mux
}

// summaryHandler serves /stats/summary (GET or POST, as kubelet) with
// ?only_cpu_and_memory=true.
func summaryHandler(f func(ctx context.Context, onlyCPUAndMemory bool) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		only := false
		if v := r.URL.Query().Get("only_cpu_and_memory"); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				http.Error(w, "only_cpu_and_memory: "+err.Error(), http.StatusBadRequest)
				return
			}
			only = b
		}
		sum, err := f(r.Context(), only)
		if err != nil {
			http.Error(w, "summary: "+err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, sum)
	})
}

func configz(f func() any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"kubeletconfig": f()})
	})
}
