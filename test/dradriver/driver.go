package dradriver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
)

// Config is the driver's setup.
type Config struct {
	// Name is the driver name (a DNS subdomain).
	Name, NodeName string
	// RegistryDir is the node's plugins_registry; PluginDir holds the
	// driver's gRPC socket; CDIDir the CDI specs it writes (the
	// runtime's CDI spec dir); StateDir its call log.
	RegistryDir, PluginDir, CDIDir, StateDir string
	// Devices is how many devices it publishes.
	Devices int
	Client  kubernetes.Interface
}

// CDIKind is the CDI kind (vendor/class) of the driver's devices.
const CDIKind = "test.kernelet.io/dra"

// CallLog is the call log's name in the state dir.
const CallLog = "calls.log"

// Driver is a running driver.
type Driver struct {
	cfg    Config
	helper *kubeletplugin.Helper
	mu     sync.Mutex
}

// Start registers the plugin and publishes the devices.
func Start(ctx context.Context, cfg Config) (*Driver, error) {
	for _, d := range []string{cfg.PluginDir, cfg.CDIDir, cfg.StateDir} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, err
		}
	}
	d := &Driver{cfg: cfg}
	h, err := kubeletplugin.Start(ctx, d, kubeletplugin.DriverName(cfg.Name), kubeletplugin.NodeName(cfg.NodeName),
		kubeletplugin.KubeClient(cfg.Client), kubeletplugin.RegistrarDirectoryPath(cfg.RegistryDir),
		kubeletplugin.PluginDataDirectoryPath(cfg.PluginDir))
	if err != nil {
		return nil, fmt.Errorf("start the kubelet plugin: %w", err)
	}
	d.helper = h
	devices := make([]resourceapi.Device, cfg.Devices)
	for i := range devices {
		devices[i] = resourceapi.Device{Name: fmt.Sprintf("dev-%d", i)}
	}
	res := resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{cfg.NodeName: {Slices: []resourceslice.Slice{{Devices: devices}}}}}
	if err := h.PublishResources(ctx, res); err != nil {
		h.Stop()
		return nil, fmt.Errorf("publish resources: %w", err)
	}
	return d, nil
}

// Stop unregisters the plugin (its ResourceSlices stay: the kubelet
// removes them).
func (d *Driver) Stop() { d.helper.Stop() }

// PrepareResourceClaims implements kubeletplugin.DRAPlugin.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := map[types.UID]kubeletplugin.PrepareResult{}
	for _, c := range claims {
		d.log("Prepare %s/%s", c.Namespace, c.Name)
		out[c.UID] = d.prepare(c)
	}
	return out, nil
}

// cdiSpec is the part of a CDI spec the driver writes.
type cdiSpec struct {
	Version string      `json:"cdiVersion"`
	Kind    string      `json:"kind"`
	Devices []cdiDevice `json:"devices"`
}

type cdiDevice struct {
	Name  string `json:"name"`
	Edits struct {
		Env []string `json:"env"`
	} `json:"containerEdits"`
}

func (d *Driver) prepare(c *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	if c.Status.Allocation == nil {
		return kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s/%s is not allocated", c.Namespace, c.Name)}
	}
	spec := cdiSpec{Version: "0.6.0", Kind: CDIKind}
	var res kubeletplugin.PrepareResult
	for i, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != d.cfg.Name {
			continue
		}
		dev := cdiDevice{Name: fmt.Sprintf("%s-%s", c.UID, r.Device)}
		dev.Edits.Env = []string{"DRA_CLAIM=" + c.Namespace + "/" + c.Name, fmt.Sprintf("DRA_DEVICE_%d=%s", i, r.Device)}
		spec.Devices = append(spec.Devices, dev)
		res.Devices = append(res.Devices, kubeletplugin.Device{Requests: []string{r.Request}, PoolName: r.Pool,
			DeviceName: r.Device, CDIDeviceIDs: []string{CDIKind + "=" + dev.Name}})
	}
	b, err := json.Marshal(spec)
	if err == nil {
		err = os.WriteFile(d.specPath(c.UID), b, 0o644)
	}
	if err != nil {
		return kubeletplugin.PrepareResult{Err: err}
	}
	return res
}

func (d *Driver) specPath(uid types.UID) string {
	return filepath.Join(d.cfg.CDIDir, strings.ReplaceAll(d.cfg.Name, ".", "_")+"-"+string(uid)+".json")
}

// UnprepareResourceClaims implements kubeletplugin.DRAPlugin.
func (d *Driver) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := map[types.UID]error{}
	for _, c := range claims {
		d.log("Unprepare %s/%s", c.Namespace, c.Name)
		err := os.Remove(d.specPath(c.UID))
		if os.IsNotExist(err) {
			err = nil
		}
		out[c.UID] = err
	}
	return out, nil
}

// HandleError implements kubeletplugin.DRAPlugin.
func (d *Driver) HandleError(ctx context.Context, err error, msg string) {
	klog.FromContext(ctx).Error(err, msg)
}

// WatchHealthStatus implements kubeletplugin.DRAPlugin: every device is
// reported Healthy once (valid for an hour), then nothing until ctx ends.
func (d *Driver) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	r := kubeletplugin.DeviceHealthReport{}
	for i := range d.cfg.Devices {
		r.Devices = append(r.Devices, kubeletplugin.DeviceHealth{PoolName: d.cfg.NodeName, DeviceName: fmt.Sprintf("dev-%d", i),
			Health: kubeletplugin.HealthStatusHealthy, LastUpdated: time.Now(), HealthCheckTimeout: time.Hour, Message: "test device"})
	}
	select {
	case reports <- r:
	case <-ctx.Done():
		return nil
	}
	<-ctx.Done()
	return nil
}

func (d *Driver) log(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, err := os.OpenFile(filepath.Join(d.cfg.StateDir, CallLog), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, format+"\n", args...)
}

// ReadCallLog is the calls the driver in stateDir logged.
func ReadCallLog(stateDir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(stateDir, CallLog))
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n"), nil
}
