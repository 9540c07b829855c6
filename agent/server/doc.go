// Package server serves the agent's HTTP endpoints: /healthz (with named
// checks, kubelet's verbose format), /metrics (Prometheus), /configz (the
// effective configuration, as kubelet serves it) and /status (kernelet's
// own summary that `kernelet status` prints).
//
// Until the secure kubelet API (TLS, authentication, authorization) exists,
// every listener binds to loopback only; the caller decides the address.
// The package knows nothing of pods or the kernel: what it serves comes in
// as functions and collectors.
package server
