package dra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/klog/v2"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
)

// HealthServices are the DRAResourceHealth services kubelet v1.37.2
// watches, newest first (the plugin's newest wins).
var HealthServices = []string{drahealthv1.DRAResourceHealthService, drahealthv1alpha1.DRAResourceHealthService}

// Kubelet's health constants.
const (
	// DefaultHealthTimeout is how long a reported health holds when the
	// driver gives no timeout; then the device's health is Unknown.
	DefaultHealthTimeout = 30 * time.Second
	// maxDevicesPerDriver bounds the devices kept per driver.
	maxDevicesPerDriver = 16384
	// healthRetry is the wait before the stream is opened again.
	healthRetry = 5 * time.Second
	// healthUpdatesCap is how many updates wait for the agent.
	healthUpdatesCap = 100
)

// deviceHealth is a device's last reported health.
type deviceHealth struct {
	health  v1.ResourceHealthStatus
	message string
	updated time.Time
	timeout time.Duration
}

// chooseHealthService is the newest health service both sides have ("":
// the plugin offers none).
func chooseHealthService(offered []string) string {
	for _, s := range HealthServices {
		if slices.Contains(offered, s) {
			return s
		}
	}
	return ""
}

// watchHealth follows the plugin's NodeWatchResources stream until ctx
// ends, opened again 5 s after it ends; a plugin answering Unimplemented is
// not asked again. The driver's health is forgotten whenever a stream ends.
func (m *Manager) watchHealth(ctx context.Context, p *plugin, service string) {
	log := klog.FromContext(ctx).WithValues("driverName", p.driver, "endpoint", p.endpoint)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		err := m.followHealth(ctx, p, service)
		m.clearHealth(p.driver)
		log.V(2).Info("WatchResources health stream has ended", "err", err)
		if status.Code(err) == codes.Unimplemented {
			cancel()
		}
	}, healthRetry)
}

func (m *Manager) followHealth(ctx context.Context, p *plugin, service string) error {
	var stream drahealthv1.DRAResourceHealth_NodeWatchResourcesClient
	var err error
	if service == drahealthv1alpha1.DRAResourceHealthService {
		stream, err = drahealthv1.V1Alpha1ClientWrapper{Client: drahealthv1alpha1.NewDRAResourceHealthClient(p.conn)}.NodeWatchResources(ctx, &drahealthv1.NodeWatchResourcesRequest{})
	} else {
		stream, err = drahealthv1.NewDRAResourceHealthClient(p.conn).NodeWatchResources(ctx, &drahealthv1.NodeWatchResourcesRequest{}, grpc.WaitForReady(true))
	}
	if err != nil {
		return err
	}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if uids := m.updateHealth(p.driver, resp.GetDevices(), time.Now()); len(uids) > 0 {
			select {
			case m.healthUpdates <- uids:
			default:
				klog.FromContext(ctx).Error(nil, "DRA health update channel is full, discarding pod update notification", "pods", uids)
			}
		}
	}
}

// updateHealth records a report of driver at now (kubelet's rules: a
// device not reported keeps its health until its timeout, then goes) and
// returns the pods using a device whose health changed.
func (m *Manager) updateHealth(driver string, devs []*drahealthv1.DeviceHealth, now time.Time) []types.UID {
	m.healthMu.Lock()
	known := m.health[driver]
	if known == nil {
		known = map[string]deviceHealth{}
		m.health[driver] = known
	}
	changed := map[string]bool{}
	reported := map[string]bool{}
	deleted := false
	for _, d := range devs {
		key := d.GetDevice().GetPoolName() + "/" + d.GetDevice().GetDeviceName()
		reported[key] = true
		old, ok := known[key]
		if !ok && len(known) >= maxDevicesPerDriver {
			continue
		}
		h := deviceHealth{health: healthOf(d.GetHealth()), message: truncateMessage(d.GetMessage()), updated: now, timeout: DefaultHealthTimeout}
		if s := d.GetHealthCheckTimeoutSeconds(); s > 0 {
			h.timeout = time.Duration(s) * time.Second
		}
		if !ok || old.health != h.health || old.message != h.message || old.timeout != h.timeout {
			changed[key] = true
		}
		known[key] = h
	}
	for key, h := range known {
		if !reported[key] && now.Sub(h.updated) > h.timeout {
			if h.health != v1.ResourceHealthStatusUnknown {
				changed[key] = true
			}
			delete(known, key)
			deleted = true
		}
	}
	if len(changed) > 0 || deleted {
		if err := m.saveHealthLocked(); err != nil {
			klog.Background().Error(err, "Failed to save health checkpoint after update. Kubelet restart may lose the device health information.")
		}
	}
	m.healthMu.Unlock()
	return m.podsUsing(driver, changed)
}

// podsUsing are the pods whose claims hold a device of driver in keys
// (pool/device).
func (m *Manager) podsUsing(driver string, keys map[string]bool) []types.UID {
	if len(keys) == 0 {
		return nil
	}
	m.claimsMu.Lock()
	defer m.claimsMu.Unlock()
	var out []types.UID
	for _, ci := range m.claims.claims {
		for _, d := range ci.DriverState[driver].Devices {
			if keys[d.PoolName+"/"+d.DeviceName] {
				for uid := range ci.PodUIDs {
					if !slices.Contains(out, types.UID(uid)) {
						out = append(out, types.UID(uid))
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// clearHealth forgets driver's health (its stream ended), checkpointed.
func (m *Manager) clearHealth(driver string) {
	m.healthMu.Lock()
	defer m.healthMu.Unlock()
	delete(m.health, driver)
	if err := m.saveHealthLocked(); err != nil {
		klog.Background().Error(err, "Failed to clear health info cache for driver", "driverName", driver)
	}
}

func healthOf(h drahealthv1.HealthStatus) v1.ResourceHealthStatus {
	switch h {
	case drahealthv1.HealthStatus_HEALTHY:
		return v1.ResourceHealthStatusHealthy
	case drahealthv1.HealthStatus_UNHEALTHY:
		return v1.ResourceHealthStatusUnhealthy
	}
	return v1.ResourceHealthStatusUnknown
}

// truncateMessage is kubelet's: at most v1.ResourceHealthMessageMaxLength,
// "..." ending a cut one.
func truncateMessage(s string) string {
	if len(s) <= v1.ResourceHealthMessageMaxLength {
		return s
	}
	return s[:v1.ResourceHealthMessageMaxLength-3] + "..."
}

// deviceHealthAt is the health of driver's device at now: Unknown when
// never reported or past its timeout.
func (m *Manager) deviceHealthAt(driver, pool, device string, now time.Time) deviceHealth {
	m.healthMu.Lock()
	defer m.healthMu.Unlock()
	h, ok := m.health[driver][pool+"/"+device]
	if !ok || now.Sub(h.updated) > h.timeout {
		return deviceHealth{health: v1.ResourceHealthStatusUnknown}
	}
	return h
}

// HealthUpdates delivers the pods whose devices changed health.
func (m *Manager) HealthUpdates() <-chan []types.UID {
	if m == nil {
		return nil
	}
	return m.healthUpdates
}

// HealthStatus is the allocatedResourcesStatus of pod's container name
// for its claims (kubelet's): one entry per claim reference it names,
// "claim:<name>" or "claim:<name>/<request>", with each prepared device
// of the claim (of the request) by its first CDI device ID (else
// driver/pool/device) and its health (Unknown when its driver reports
// none) and message; entries without devices are left out.
func (m *Manager) HealthStatus(pod *v1.Pod, name string) []v1.ResourceStatus {
	if m == nil {
		return nil
	}
	c := containerOf(pod, name)
	if c == nil || len(c.Resources.Claims) == 0 {
		return nil
	}
	now := time.Now()
	byName := map[v1.ResourceName]*v1.ResourceStatus{}
	for _, ref := range c.Resources.Claims {
		claim := actualClaimName(pod, ref.Name)
		if claim == "" {
			continue
		}
		m.claimsMu.Lock()
		ci := m.claims.claims[claimKey(pod.Namespace, claim)]
		var st ClaimState
		if ci != nil {
			st = ci.copyState()
		}
		m.claimsMu.Unlock()
		if ci == nil {
			continue
		}
		rn := v1.ResourceName("claim:" + ref.Name)
		if ref.Request != "" {
			rn = v1.ResourceName(fmt.Sprintf("claim:%s/%s", ref.Name, ref.Request))
		}
		rs := &v1.ResourceStatus{Name: rn, Resources: []v1.ResourceHealth{}}
		byName[rn] = rs
		for _, driver := range sortedDrivers(st.DriverState) {
			for _, d := range st.DriverState[driver].Devices {
				if ref.Request != "" && len(d.RequestNames) > 0 && !slices.Contains(d.RequestNames, resourceclaim.BaseRequestRef(ref.Request)) {
					continue
				}
				rh := resourceHealth(driver, d, m.deviceHealthAt(driver, d.PoolName, d.DeviceName, now))
				if !slices.ContainsFunc(rs.Resources, func(x v1.ResourceHealth) bool { return x.ResourceID == rh.ResourceID }) {
					rs.Resources = append(rs.Resources, rh)
				}
			}
		}
	}
	var out []v1.ResourceStatus
	for _, rs := range byName {
		if len(rs.Resources) > 0 {
			out = append(out, *rs)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func resourceHealth(driver string, d Device, h deviceHealth) v1.ResourceHealth {
	rh := v1.ResourceHealth{Health: h.health, ResourceID: v1.ResourceID(fmt.Sprintf("%s/%s/%s", driver, d.PoolName, d.DeviceName))}
	if len(d.CDIDeviceIDs) > 0 {
		rh.ResourceID = v1.ResourceID(d.CDIDeviceIDs[0])
	}
	if h.message != "" {
		msg := h.message
		rh.Message = &msg
	}
	return rh
}

// actualClaimName is the ResourceClaim of pod's claim podClaim: from the
// pod's resourceClaimStatuses, else as resourceclaim.Name finds it.
func actualClaimName(pod *v1.Pod, podClaim string) string {
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.Name == podClaim && s.ResourceClaimName != nil {
			return *s.ResourceClaimName
		}
	}
	for i := range pod.Spec.ResourceClaims {
		if pod.Spec.ResourceClaims[i].Name == podClaim {
			if n, _, err := resourceclaim.Name(pod, &pod.Spec.ResourceClaims[i]); err == nil && n != nil {
				return *n
			}
		}
	}
	return ""
}

// containerOf is pod's regular container name (kubelet reports the
// health of regular containers).
func containerOf(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}
