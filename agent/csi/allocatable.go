package csi

import (
	"context"
	"fmt"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/internal/clientset"
)

// UpdatePeriod is a CSIDriver's nodeAllocatableUpdatePeriodSeconds (0:
// none, or no CSIDriver).
func UpdatePeriod(d *storagev1.CSIDriver) time.Duration {
	if d == nil || d.Spec.NodeAllocatableUpdatePeriodSeconds == nil {
		return 0
	}
	return time.Duration(*d.Spec.NodeAllocatableUpdatePeriodSeconds) * time.Second
}

// allocatablePeriods are the registered drivers whose CSIDriver asks for
// updates of the allocatable count, with their periods.
func allocatablePeriods(registered []string, driver func(string) *storagev1.CSIDriver) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, name := range registered {
		if p := UpdatePeriod(driver(name)); p > 0 {
			out[name] = p
		}
	}
	return out
}

// AllocatableUpdater keeps the CSINode's allocatable volume counts
// current as kubelet does with MutableCSINodeAllocatableCount (GA in
// v1.37.2): every registered driver whose CSIDriver sets
// nodeAllocatableUpdatePeriodSeconds is asked NodeGetInfo every period
// and its CSINode entry updated (UpdateDriver does it on demand: an
// attachment that failed with ResourceExhausted). The CSIDrivers are
// watched: a period set, changed or removed restarts the driver's loop.
type AllocatableUpdater struct {
	reg      *Registry
	nodeInfo *NodeInfo
	client   clientset.Interface
}

// NewAllocatableUpdater returns the updater of r's drivers into nodeInfo.
func NewAllocatableUpdater(r *Registry, nodeInfo *NodeInfo, client clientset.Interface) *AllocatableUpdater {
	return &AllocatableUpdater{reg: r, nodeInfo: nodeInfo, client: client}
}

// UpdateDriver asks driver name's NodeGetInfo and writes it in the
// CSINode (kubelet's updateCSIDriver).
func (u *AllocatableUpdater) UpdateDriver(ctx context.Context, name string) error {
	d, err := u.reg.Lookup(name)
	if err != nil {
		return err
	}
	c, err := u.reg.dial(d.Endpoint)
	if err != nil {
		return fmt.Errorf("failed to create CSI client for driver %q: %w", name, err)
	}
	defer func() { _ = c.Close() }()
	callCtx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	info, err := c.NodeGetInfo(callCtx)
	if err != nil {
		return fmt.Errorf("failed to get NodeGetInfo from driver %q: %w", name, err)
	}
	if err := u.nodeInfo.UpdateDriver(ctx, name, info); err != nil {
		return fmt.Errorf("failed to update driver %q: %w", name, err)
	}
	return nil
}

// Run watches the CSIDrivers and the registrations and runs a loop per
// driver that asks for updates, until ctx ends.
func (u *AllocatableUpdater) Run(ctx context.Context) {
	inf := cache.NewSharedIndexInformer(clientset.ListWatch(u.client.CSIDrivers(), nil), &storagev1.CSIDriver{}, 0, cache.Indexers{})
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { poke() },
		UpdateFunc: func(any, any) { poke() }, DeleteFunc: func(any) { poke() }}); err != nil {
		klog.FromContext(ctx).Error(err, "Watching the CSIDrivers for nodeAllocatableUpdatePeriodSeconds")
		return
	}
	go inf.Run(ctx.Done())
	driver := func(name string) *storagev1.CSIDriver {
		obj, ok, err := inf.GetStore().GetByKey(name)
		if d, isDriver := obj.(*storagev1.CSIDriver); ok && err == nil && isDriver {
			return d
		}
		return nil
	}
	type loop struct {
		period time.Duration
		stop   context.CancelFunc
	}
	loops := map[string]loop{}
	defer func() {
		for _, l := range loops {
			l.stop()
		}
	}()
	for {
		regChanged := u.reg.Changed()
		want := allocatablePeriods(u.reg.Drivers(), driver)
		for name, l := range loops {
			if want[name] != l.period {
				l.stop()
				delete(loops, name)
			}
		}
		for name, period := range want {
			if _, ok := loops[name]; !ok {
				lctx, stop := context.WithCancel(ctx)
				loops[name] = loop{period: period, stop: stop}
				go u.every(lctx, name, period)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-regChanged:
		}
	}
}

// every updates driver name every period until ctx ends.
func (u *AllocatableUpdater) every(ctx context.Context, name string, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := u.UpdateDriver(ctx, name); err != nil {
				klog.FromContext(ctx).Error(err, "Failed to update CSIDriver", "driver", name)
			}
		}
	}
}
