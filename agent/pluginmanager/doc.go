// Package pluginmanager registers node plugins as kubelet's plugin manager
// does: it watches <root-dir>/plugins_registry (and its sub-directories)
// with fsnotify, and for every Unix socket that appears (names starting
// with "." ignored) it dials the socket, asks GetInfo of the
// pluginregistration.v1 API, hands the plugin to the Handler of its type
// (CSIPlugin, DRAPlugin, … — the handlers are given by the caller, so
// other plugin types plug in without changing this package), which
// validates the offered versions and registers it, and tells the plugin
// the outcome with NotifyRegistrationStatus (kubelet's "RegisterPlugin
// error -- …" messages). A socket that is removed is deregistered; one
// re-created is deregistered and registered again. Failed registrations
// are retried with an exponential backoff (500 ms doubling to 2m2s, as
// kubelet's operations).
//
// What to register and unregister is a pure function of the desired
// sockets and the registered plugins (Plan); the watcher, the gRPC calls
// and the handlers sit beside it. It knows nothing about CSI or DRA.
package pluginmanager
