package pluginmanager

import (
	"context"
	"time"
)

// Handler takes the plugins of one type (the PluginInfo's type,
// e.g. registerapi.CSIPlugin).
type Handler interface {
	// ValidatePlugin checks the plugin's name, endpoint and supported
	// versions before registration.
	ValidatePlugin(ctx context.Context, name, endpoint string, versions []string) error
	// RegisterPlugin makes the plugin usable; an error fails the
	// registration (the plugin is told and it is retried).
	RegisterPlugin(ctx context.Context, name, endpoint string, versions []string) error
	// DeRegisterPlugin is called once its registration socket is gone.
	DeRegisterPlugin(ctx context.Context, name, endpoint string)
}

// Config wires a Manager.
type Config struct {
	// Dir is the registration directory (<root-dir>/plugins_registry),
	// created 0750 when missing.
	Dir string
	// Handlers by plugin type.
	Handlers map[string]Handler
}

// Plugin is a registered plugin.
type Plugin struct {
	// SocketPath is its registration socket.
	SocketPath string
	// Type, Name and Endpoint are what GetInfo answered (the endpoint
	// defaulted to the socket path).
	Type, Name, Endpoint string
	// Versions are the versions it offered.
	Versions []string
	// Generation identifies the socket's creation it was registered for.
	Generation uint64
}

// Kubelet's timeouts and backoff of registration.
const (
	getInfoTimeout  = time.Second
	notifyTimeout   = 5 * time.Second
	initialBackoff  = 500 * time.Millisecond
	maxBackoff      = 2*time.Minute + 2*time.Second
	reconcilePeriod = time.Second
)
