package dra

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/stats"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	drapbv1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"
)

// Services are the DRA gRPC services kubelet v1.37.2 speaks, newest first.
var Services = []string{drapb.DRAPluginService, drapbv1beta1.DRAPluginService}

// chooseService is the newest service of Services that a plugin offering
// offered serves (kubelet's errors otherwise).
func chooseService(offered []string) (string, error) {
	if len(offered) == 0 {
		return "", errors.New("empty list of supported gRPC services (aka supported versions)")
	}
	for _, s := range offered {
		if slices.Contains(Services, s) {
			return s, nil
		}
	}
	return "", fmt.Errorf("none of services supported by the plugin (%q) are supported by the kubelet (%q)", offered, Services)
}

// plugin is one registered kubelet plugin of a DRA driver.
type plugin struct {
	driver, endpoint, service string
	conn                      *grpc.ClientConn
	// stopHealth ends its health stream (nil: none).
	stopHealth context.CancelFunc
	// connected: its gRPC connection is up; removed: deregistered (its
	// connection closed). Both guarded by Manager.mu.
	connected, removed bool
}

func (p *plugin) prepare(ctx context.Context, req *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	if p.service == drapbv1beta1.DRAPluginService {
		return drapbv1beta1.V1Beta1ClientWrapper{DRAPluginClient: drapbv1beta1.NewDRAPluginClient(p.conn)}.NodePrepareResources(ctx, req)
	}
	return drapb.NewDRAPluginClient(p.conn).NodePrepareResources(ctx, req)
}

func (p *plugin) unprepare(ctx context.Context, req *drapb.NodeUnprepareResourcesRequest) (*drapb.NodeUnprepareResourcesResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	if p.service == drapbv1beta1.DRAPluginService {
		return drapbv1beta1.V1Beta1ClientWrapper{DRAPluginClient: drapbv1beta1.NewDRAPluginClient(p.conn)}.NodeUnprepareResources(ctx, req)
	}
	return drapb.NewDRAPluginClient(p.conn).NodeUnprepareResources(ctx, req)
}

// ValidatePlugin implements pluginmanager.Handler.
func (m *Manager) ValidatePlugin(_ context.Context, driver, endpoint string, versions []string) error {
	if _, err := chooseService(versions); err != nil {
		return fmt.Errorf("invalid supported gRPC versions of DRA driver plugin %s at endpoint %s: %w", driver, endpoint, err)
	}
	return nil
}

// RegisterPlugin implements pluginmanager.Handler: the plugin's newest
// service is chosen and a connection made (gRPC dials at once and on
// demand); the driver is usable once the connection is up (connWatch).
func (m *Manager) RegisterPlugin(ctx context.Context, driver, endpoint string, versions []string) error {
	service, err := chooseService(versions)
	if err != nil {
		return fmt.Errorf("invalid supported gRPC versions of DRA driver plugin %s at endpoint %s: %w", driver, endpoint, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.plugins[driver] {
		if p.endpoint == endpoint {
			return fmt.Errorf("endpoint %s already registered for DRA driver plugin %s", endpoint, driver)
		}
	}
	p := &plugin{driver: driver, endpoint: endpoint, service: service}
	conn, err := grpc.NewClient("unix:"+endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(m.cfg.Metrics.interceptor(driver)), grpc.WithStatsHandler(connWatch{m: m, p: p}))
	if err != nil {
		return fmt.Errorf("create gRPC connection to DRA driver %s plugin at endpoint %s: %w", driver, endpoint, err)
	}
	p.conn = conn
	conn.Connect()
	if hs := chooseHealthService(versions); hs != "" {
		var hctx context.Context
		hctx, p.stopHealth = context.WithCancel(klog.NewContext(m.bg, klog.FromContext(ctx)))
		m.wg.Go(func() { m.watchHealth(hctx, p, hs) })
	}
	m.plugins[driver] = append(m.plugins[driver], p)
	m.syncLocked(driver)
	klog.FromContext(ctx).V(2).Info("Registered DRA plugin", "driverName", driver, "endpoint", endpoint, "chosenService", service)
	return nil
}

// DeRegisterPlugin implements pluginmanager.Handler: the plugin's
// connection is closed; a driver left without a connected plugin has its
// ResourceSlices wiped after the wiping delay (syncLocked).
func (m *Manager) DeRegisterPlugin(ctx context.Context, driver, endpoint string) {
	m.mu.Lock()
	ps := m.plugins[driver]
	i := slices.IndexFunc(ps, func(p *plugin) bool { return p.endpoint == endpoint })
	if i < 0 {
		m.mu.Unlock()
		return
	}
	p := ps[i]
	p.removed = true
	if p.stopHealth != nil {
		p.stopHealth()
	}
	m.plugins[driver] = slices.Delete(ps, i, i+1)
	if len(m.plugins[driver]) == 0 {
		delete(m.plugins, driver)
	}
	klog.FromContext(ctx).V(2).Info("Unregistered DRA plugin", "driverName", driver, "endpoint", endpoint, "numPlugins", len(m.plugins[driver]))
	m.syncLocked(driver)
	m.mu.Unlock()
	// Closed unlocked: closing reports the connection's end (connWatch).
	_ = p.conn.Close()
}

// usableLocked tells whether one of driver's plugins is connected.
func (m *Manager) usableLocked(driver string) bool {
	return slices.ContainsFunc(m.plugins[driver], func(p *plugin) bool { return p.connected })
}

// syncLocked follows a change of driver's plugins or of their
// connections as kubelet: a usable driver has no pending wipe; one that
// is not gets one, its ResourceSlices deleted after the wiping delay
// unless it became usable meanwhile (a pending wipe keeps its time).
func (m *Manager) syncLocked(driver string) {
	if m.cfg.Client == nil {
		return
	}
	if m.usableLocked(driver) {
		if t := m.wipes[driver]; t != nil {
			t.Stop()
			delete(m.wipes, driver)
		}
		return
	}
	if m.wipes[driver] != nil {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(m.wipingDelay, func() {
		m.mu.Lock()
		mine := m.wipes[driver] == t
		if mine {
			delete(m.wipes, driver)
		}
		wipe := mine && !m.usableLocked(driver)
		m.mu.Unlock()
		if wipe {
			m.wipeSlices(m.bg, driver)
		}
	})
	m.wipes[driver] = t
}

// connWatch follows a plugin's gRPC connection (a grpc stats.Handler):
// up at ConnBegin, down at ConnEnd, when a new connection is asked for
// at once (gRPC would not try again by itself, and a restarted plugin
// would go unnoticed).
type connWatch struct {
	m *Manager
	p *plugin
}

func (connWatch) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (connWatch) HandleRPC(context.Context, stats.RPCStats)                         {}
func (connWatch) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

func (w connWatch) HandleConn(_ context.Context, s stats.ConnStats) {
	var connected bool
	switch s.(type) {
	case *stats.ConnBegin:
		connected = true
	case *stats.ConnEnd:
	default:
		return
	}
	if w.m.bg.Err() != nil {
		return // shutting down
	}
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	if w.p.removed {
		return
	}
	if !connected {
		// Not from here: gRPC deadlocks when asked to connect inside
		// HandleConn of a connection going idle.
		go w.p.conn.Connect()
	}
	klog.FromContext(w.m.bg).V(2).Info("Connection changed", "driverName", w.p.driver, "endpoint", w.p.endpoint, "connected", connected)
	w.p.connected = connected
	w.m.syncLocked(w.p.driver)
}

// pluginFor is the plugin calls for driver go to: its latest connected
// one, else its latest one (kubelet's errors when there is none).
func (m *Manager) pluginFor(driver string) (*plugin, error) {
	if driver == "" {
		return nil, errors.New("DRA driver name is empty")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := m.plugins[driver]
	if len(ps) == 0 {
		return nil, fmt.Errorf("DRA driver %s is not registered", driver)
	}
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].connected {
			return ps[i], nil
		}
	}
	return ps[len(ps)-1], nil
}

// wipeSlices deletes the ResourceSlices of this node (of driver; "": all
// of them), retried with kubelet's backoff (1 s doubling to 5 min, 100
// steps) until it succeeds or ctx ends.
func (m *Manager) wipeSlices(ctx context.Context, driver string) {
	if m.cfg.Client == nil {
		return
	}
	sel := fields.Set{resourceapi.ResourceSliceSelectorNodeName: m.cfg.NodeName}
	if driver != "" {
		sel[resourceapi.ResourceSliceSelectorDriver] = driver
	}
	log := klog.FromContext(ctx)
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.2, Cap: 5 * time.Minute, Steps: 100}
	_ = wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		err := m.cfg.Client.ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: sel.String()})
		switch {
		case err == nil || apierrors.IsNotFound(err):
			log.V(3).Info("Deleted ResourceSlices", "fieldSelector", sel.String())
			return true, nil
		default:
			log.V(3).Info("Deleting ResourceSlice failed, retrying", "fieldSelector", sel.String(), "err", err)
			return false, nil
		}
	})
}
