// Package streaming serves the kubelet API's interactive endpoints:
// /exec, /attach and /portForward (with and without the pod UID in the
// path) and /run. Exec, attach and port-forward ask the CRI runtime for a
// streaming URL and proxy the upgraded connection (SPDY or WebSocket, as
// the client speaks) to the runtime's streaming server with
// k8s.io/apimachinery's upgrade-aware proxy, as kubelet does by default; a
// WebSocket client of the v5 remote-command protocol is translated to SPDY
// (Translator: k8s.io/streaming's WebSocket channels on the client's side,
// client-go's SPDY executor on the runtime's) and SPDY tunneled in a
// WebSocket (port-forward) is unwrapped (Tunnel: the bytes relayed
// between the WebSocket and a SPDY upgrade of the runtime's URL), as the
// API server does, without k8s.io/apiserver's translators (they link
// client-go's informers and clientset scheme);
// /run executes a command with ExecSync and answers its output.
//
// It reaches the runtime through internalapi.RuntimeService and the
// agent's pods through the small Pods interface; it knows nothing of pod
// workers, and authentication and authorization are the caller's
// (agent/server/auth, in front of the kubelet API).
package streaming
