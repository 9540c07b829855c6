package csi

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/klog/v2"
)

// Driver is a registered CSI driver.
type Driver struct {
	Name     string
	Endpoint string
	// Version is the highest CSI version it offered.
	Version *utilversion.Version
	Info    DriverInfo
}

// Registry holds the registered CSI drivers; it is agent/pluginmanager's
// handler of CSIPlugin.
type Registry struct {
	// NodeInfo records registrations in the API; nil: standalone.
	nodeInfo NodeInfoUpdater
	// dial connects to a driver (tests replace it).
	dial func(endpoint string) (*Client, error)

	mu      sync.Mutex
	drivers map[string]Driver
	changed chan struct{}
}

// NewRegistry returns an empty registry recording into nodeInfo (nil:
// standalone).
func NewRegistry(nodeInfo NodeInfoUpdater) *Registry {
	return &Registry{nodeInfo: nodeInfo, dial: Dial, drivers: map[string]Driver{}, changed: make(chan struct{})}
}

// ValidatePlugin checks the versions offered (kubelet's messages).
func (r *Registry) ValidatePlugin(_ context.Context, name, endpoint string, versions []string) error {
	if _, err := r.validateVersions("ValidatePlugin", name, versions); err != nil {
		return fmt.Errorf("validation failed for CSI Driver %s at endpoint %s: %w", name, endpoint, err)
	}
	return nil
}

func (r *Registry) validateVersions(caller, name string, versions []string) (*utilversion.Version, error) {
	if len(versions) == 0 {
		return nil, fmt.Errorf("%s for CSI driver %q failed. Plugin returned an empty list for supported versions", caller, name)
	}
	highest, err := utilversion.HighestSupportedVersion(versions)
	if err != nil {
		return nil, fmt.Errorf("%s for CSI driver %q failed. None of the versions specified %q are supported. err=%w", caller, name, versions, err)
	}
	r.mu.Lock()
	existing, ok := r.drivers[name]
	r.mu.Unlock()
	if ok && !existing.Version.LessThan(highest) {
		return nil, fmt.Errorf("%s for CSI driver %q failed. Another driver with the same name is already registered with a higher supported version: %q", caller, name, existing.Version)
	}
	return highest, nil
}

// RegisterPlugin asks the driver's NodeGetInfo and records it.
func (r *Registry) RegisterPlugin(ctx context.Context, name, endpoint string, versions []string) error {
	highest, err := r.validateVersions("RegisterPlugin", name, versions)
	if err != nil {
		return err
	}
	c, err := r.dial(endpoint)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	callCtx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	info, err := c.NodeGetInfo(callCtx)
	if err != nil {
		return err
	}
	if r.nodeInfo != nil {
		if err := r.nodeInfo.InstallDriver(ctx, name, info); err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.drivers[name] = Driver{Name: name, Endpoint: endpoint, Version: highest, Info: info}
	r.notifyLocked()
	r.mu.Unlock()
	return nil
}

// DeRegisterPlugin forgets the driver and removes it from the API.
func (r *Registry) DeRegisterPlugin(ctx context.Context, name, endpoint string) {
	r.mu.Lock()
	if d, ok := r.drivers[name]; ok && d.Endpoint == endpoint {
		delete(r.drivers, name)
		r.notifyLocked()
	}
	r.mu.Unlock()
	if r.nodeInfo != nil {
		if err := r.nodeInfo.UninstallDriver(ctx, name); err != nil {
			klog.FromContext(ctx).Error(err, "Removing a CSI driver from the node", "driver", name)
		}
	}
}

func (r *Registry) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// ErrNotRegistered is matched by Lookup's error for unknown drivers.
var ErrNotRegistered = errors.New("not found in the list of registered CSI drivers")

// Lookup returns the registered driver of that name; the error is
// kubelet's "driver name X not found in the list of registered CSI
// drivers".
func (r *Registry) Lookup(name string) (Driver, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.drivers[name]
	if !ok {
		return Driver{}, fmt.Errorf("driver name %s %w", name, ErrNotRegistered)
	}
	return d, nil
}

// Drivers returns the registered drivers' names, sorted.
func (r *Registry) Drivers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.drivers))
	for n := range r.drivers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Changed returns a channel closed at the next registration change.
func (r *Registry) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// String lists the registered drivers.
func (r *Registry) String() string { return strings.Join(r.Drivers(), ",") }
