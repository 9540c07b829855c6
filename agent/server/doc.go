// Package server serves the agent's HTTP endpoints: /healthz (with named
// checks, through k8s.io/apiserver's healthz as kubelet's: reasons only at
// /healthz/<check> and in the log, ?verbose, ?exclude), /metrics
// (Prometheus), /configz (the effective configuration, as kubelet serves
// it; component-base's configz is a process-wide registry, which several
// agents in one test process cannot share), /status (kernelet's own
// summary that `kernelet status` prints), /pods and the live dashboard
// (agent/server/dashboard, /dashboard/) when given.
//
// It also builds the kubelet API's muxes (SecureHandler for address:port,
// ReadOnlyHandler for readOnlyPort), the secure port's TLS configuration
// (TLSConfig: the rotating serverTLSBootstrap certificate, the configured
// or the self-signed one) and its listeners
// (ListenTLS, ListenUnix for the local socket; ListenEndpoints binds them
// all where the KubeletConfiguration places them), and serves on both
// ports the gatherers of /metrics/cadvisor, /metrics/resource and
// /metrics/probes, the Summary API's /stats/summary (?only_cpu_and_memory)
// and /runningpods/ from what KubeletAPI hands it (agent/stats produces
// the metrics and the Summary); the secure port adds /logs/ (the node's
// log files) and /debug/pprof (enableProfilingHandler), and with
// enableDebuggingHandlers off the debugging paths answer 405 as kubelet's.
// Authentication and authorization are agent/server/auth's; the log and
// streaming endpoints come in as handlers. The package knows nothing of
// pods or the kernel: what it serves comes in as functions, handlers and
// collectors.
package server
