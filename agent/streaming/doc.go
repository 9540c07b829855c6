// Package streaming serves the kubelet API's interactive endpoints:
// /exec, /attach and /portForward (with and without the pod UID in the
// path) and /run. Exec, attach and port-forward ask the CRI runtime for a
// streaming URL and proxy the upgraded connection (SPDY or WebSocket, as
// the client speaks) to the runtime's streaming server with
// k8s.io/apimachinery's upgrade-aware proxy, as kubelet does by default; a
// WebSocket client of the v5 remote-command protocol is translated to SPDY
// and SPDY tunneled in a WebSocket (port-forward) is unwrapped, with
// k8s.io/apiserver's translators, as the API server does;
// /run executes a command with ExecSync and answers its output.
//
// It reaches the runtime through internalapi.RuntimeService and the
// agent's pods through the small Pods interface.
package streaming
