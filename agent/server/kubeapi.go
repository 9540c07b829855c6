package server

import (
	"context"
	"net/http"
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
}

// notImplemented are kubelet endpoints kernelet does not serve yet: they
// answer 501 rather than 404, so that a client can tell.
var notImplemented = []string{"/stats/", "/metrics/cadvisor", "/metrics/resource", "/metrics/probes", "/spec/"}

// SecureHandler serves the kubelet API of the secure port (the caller puts
// authentication and authorization in front): /healthz, /metrics,
// /configz, /pods, /runningpods/, /containerLogs/, /exec/, /attach/,
// /portForward/, /run/, /logs/, and kernelet's /status; /stats/,
// /metrics/cadvisor, /metrics/resource, /metrics/probes and /spec/ answer
// 501.
func SecureHandler(o KubeletAPI) http.Handler {
	mux := readOnlyMux(o)
	if o.Configz != nil {
		mux.Handle("/configz", configz(o.Configz))
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

// ReadOnlyHandler serves the read-only port (plain HTTP, no
// authentication, as kubelet's readOnlyPort): /healthz, /metrics, /pods,
// /runningpods/ and kernelet's /status; the 501 endpoints as on the
// secure port.
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
	for _, p := range notImplemented {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, r.URL.Path+" is not implemented by kernelet yet", http.StatusNotImplemented)
		})
	}
	return mux
}

func configz(f func() any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"kubeletconfig": f()})
	})
}
