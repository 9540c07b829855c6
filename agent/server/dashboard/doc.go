// Package dashboard serves the live pressure dashboard below /dashboard/:
// the page (HTML, CSS and JavaScript embedded with go:embed: no CDN, no
// external fonts, it works with no network), /dashboard/api/snapshot (the
// live.Snapshot as JSON) and /dashboard/api/events (Server-Sent Events: the
// recent live events, then a snapshot every period and every event as it
// is published). `kernelet top` reads the same two endpoints.
//
// It knows nothing of pods or the kernel: the snapshot comes in as a
// function and the events from a live.Hub. Access control is the caller's
// (the agent mounts it on its local socket, the read-only port and behind
// the kubelet API's authentication and authorization, where it is the
// nodes/proxy subresource as every path kubelet does not name).
package dashboard
