// Package httpget turns a pod's HTTPGetAction into the request kubelet
// makes for it, for probes (agent/prober) and lifecycle hooks
// (agent/runtime) alike: the port (a number or a named container port),
// the URL (scheme, host, port, path with its query), the User-Agent, and
// the https → http fallback of hooks.
//
// It only computes: no request is sent here.
package httpget
