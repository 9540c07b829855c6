package agent

import (
	"context"
	"time"

	"github.com/kernelet/kernelet/agent/config"
	"github.com/kernelet/kernelet/agent/runtime"
)

// Options are the settings of one agent: the validated configuration plus
// what only flags carry.
type Options struct {
	Config *config.Config
	// NodeName is the node's name (hostname, or --hostname-override).
	NodeName string
	// RootDir holds the agent's state (--root-dir).
	RootDir string
	// Kubeconfig is the API server credential file (--kubeconfig); "" runs standalone.
	Kubeconfig string
}

// Deps are the agent's edges, replaceable in tests.
type Deps struct {
	// ConnectRuntime dials the CRI runtime; defaults to runtime.Connect.
	ConnectRuntime func(ctx context.Context, endpoint string, timeout time.Duration) (Runtime, error)
	// Now is the clock; defaults to time.Now.
	Now func() time.Time
}

// Runtime is what the agent needs from the CRI runtime today.
type Runtime interface {
	Info(ctx context.Context) (*runtime.Info, error)
	Ready(ctx context.Context) error
	Close(ctx context.Context) error
}

// Status is what /status serves and `kernelet status` prints.
type Status struct {
	Version    string        `json:"version"`
	Revision   string        `json:"revision,omitempty"`
	NodeName   string        `json:"nodeName"`
	StartTime  time.Time     `json:"startTime"`
	ConfigFile string        `json:"configFile,omitempty"`
	Mode       string        `json:"mode"` // "standalone" or "api-server"
	Runtime    RuntimeStatus `json:"runtime"`
	Thresholds []string      `json:"evictionThresholds,omitempty"`
	Endpoints  []string      `json:"endpoints,omitempty"`
}

// RuntimeStatus is the CRI runtime as the agent sees it.
type RuntimeStatus struct {
	Connected bool          `json:"connected"`
	Error     string        `json:"error,omitempty"`
	Info      *runtime.Info `json:"info,omitempty"`
}
