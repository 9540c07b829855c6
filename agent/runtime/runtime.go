package runtime

import (
	"context"
	"fmt"
	"strings"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
)

// Info is what the runtime says about itself.
type Info struct {
	Endpoint          string            `json:"endpoint"`
	RuntimeName       string            `json:"runtimeName"`
	RuntimeVersion    string            `json:"runtimeVersion"`
	RuntimeAPIVersion string            `json:"runtimeApiVersion"`
	Conditions        map[string]string `json:"conditions,omitempty"` // type → "true" or "false: reason: message"
}

// Runtime is a connection to a CRI runtime.
type Runtime struct {
	endpoint string
	svc      internalapi.RuntimeService
}

// Connect dials the CRI endpoint and checks that it speaks CRI v1. Each
// call gets timeout (runtimeRequestTimeout) as its deadline, as kubelet's
// do: RunPodSandbox twice that, StopContainer that plus the grace, ExecSync
// that plus the exec's own timeout (none when the exec has none).
func Connect(ctx context.Context, endpoint string, timeout time.Duration) (*Runtime, error) {
	svc, err := remote.NewRemoteRuntimeServiceBuilder().
		WithEndpoint(endpoint).
		WithConnectionTimeout(timeout).
		Build(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to runtime %s: %w", endpoint, err)
	}
	return &Runtime{endpoint: endpoint, svc: svc}, nil
}

// ConnectImages dials the CRI image service of endpoint. Each call gets
// timeout as its deadline except PullImage, which gets none (kubelet's:
// a pull takes as long as the image needs).
func ConnectImages(ctx context.Context, endpoint string, timeout time.Duration) (internalapi.ImageManagerService, error) {
	is, err := remote.NewRemoteImageServiceBuilder().
		WithEndpoint(endpoint).
		WithConnectionTimeout(timeout).
		Build(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", endpoint, err)
	}
	return is, nil
}

// Service is the underlying CRI runtime service.
func (r *Runtime) Service() internalapi.RuntimeService { return r.svc }

// Info asks the runtime for its version and status conditions.
func (r *Runtime) Info(ctx context.Context) (*Info, error) {
	v, err := r.svc.Version(ctx, "v1")
	if err != nil {
		return nil, fmt.Errorf("runtime version: %w", err)
	}
	info := &Info{
		Endpoint:          r.endpoint,
		RuntimeName:       v.RuntimeName,
		RuntimeVersion:    v.RuntimeVersion,
		RuntimeAPIVersion: v.RuntimeApiVersion,
	}
	st, err := r.svc.Status(ctx, false)
	if err != nil {
		return info, fmt.Errorf("runtime status: %w", err)
	}
	info.Conditions = Conditions(st.GetStatus())
	return info, nil
}

// Ready returns nil when the runtime reports RuntimeReady, or why not.
func (r *Runtime) Ready(ctx context.Context) error {
	st, err := r.svc.Status(ctx, false)
	if err != nil {
		return fmt.Errorf("runtime status: %w", err)
	}
	return RuntimeReady(st.GetStatus())
}

// Close closes the connection.
func (r *Runtime) Close(ctx context.Context) error { return r.svc.Close(ctx) }

// Conditions renders runtime conditions as type → "true" or "false: reason: message".
func Conditions(st *runtimeapi.RuntimeStatus) map[string]string {
	out := map[string]string{}
	for _, c := range st.GetConditions() {
		if c.Status {
			out[c.Type] = "true"
			continue
		}
		out[c.Type] = strings.TrimSuffix(fmt.Sprintf("false: %s: %s", c.Reason, c.Message), ": ")
	}
	return out
}

// RuntimeReady decides from a runtime status whether the runtime is ready.
func RuntimeReady(st *runtimeapi.RuntimeStatus) error {
	return conditionTrue(st, runtimeapi.RuntimeReady, func(c *runtimeapi.RuntimeCondition) error {
		if c == nil {
			return fmt.Errorf("container runtime did not report %s", runtimeapi.RuntimeReady)
		}
		return fmt.Errorf("container runtime not ready: %s: %s", c.Reason, c.Message)
	})
}

// NetworkReady decides from a runtime status whether the pod network is
// ready; the error reads as kubelet's: "container runtime network not
// ready: NetworkReady=false reason:<reason> message:<message>".
func NetworkReady(st *runtimeapi.RuntimeStatus) error {
	return conditionTrue(st, runtimeapi.NetworkReady, func(c *runtimeapi.RuntimeCondition) error {
		if c == nil {
			return fmt.Errorf("container runtime network not ready: %s not reported", runtimeapi.NetworkReady)
		}
		return fmt.Errorf("container runtime network not ready: %s=%t reason:%s message:%s", c.Type, c.Status, c.Reason, c.Message)
	})
}

// conditionTrue is nil when the first condition of type typ in st is
// true, else notReady's error for it (nil: st has none).
func conditionTrue(st *runtimeapi.RuntimeStatus, typ string, notReady func(c *runtimeapi.RuntimeCondition) error) error {
	for _, c := range st.GetConditions() {
		if c.Type == typ {
			if c.Status {
				return nil
			}
			return notReady(c)
		}
	}
	return notReady(nil)
}
