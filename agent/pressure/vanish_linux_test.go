package pressure

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/pleg"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/cgroupfs"
)

// noPods is a runtime without pods.
type noPods struct{}

func (noPods) ListPods(context.Context) ([]*runtime.PodStatus, error) { return nil, nil }

// Fault: pods deleted mid-sweep, 1000 times. Pod and container cgroups
// (real ones, in every hierarchy of this host, under a cgroup root the test
// owns) are created and removed while the eviction manager decides in a
// loop on stats read from them, and the cgroup reader sweeps them too. A
// cgroup that vanishes between listing and reading is a pod without stats:
// the stats read never fails, the reader says ErrCgroupNotFound and
// nothing else, nothing panics, the manager logs no error storm, and once
// the pods are gone no stats of them remain.
func TestFaultCgroupsVanishDuringReads(t *testing.T) {
	env.RequireRoot(t)
	const nPods = 1000
	ctx := t.Context()
	h, err := cgroups.Discover()
	if err != nil {
		t.Fatal(err)
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	root := "/" + env.RunID() + "-vanish-" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		if err := cgroupfs.RemovePod(root); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	cm, err := cgroups.NewManager(h, cgroups.ManagerConfig{CgroupRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	r, err := cgroups.NewReader(h)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := pleg.New(pleg.Config{Lister: noPods{}})
	if err != nil {
		t.Fatal(err)
	}
	es := &nodeStats{r: r, kubepods: cgroups.KubepodsCgroup(root), layout: cm.Layout(), rootDir: t.TempDir(),
		allocatable: 1 << 30, status: func(uid types.UID) *runtime.PodStatus { st, _ := pl.Cache().Get(uid); return st }}
	limit := cgroups.CgroupSettings{MemoryLimit: 32 << 20, CPUShares: 2, CPUQuota: cgroups.NoLimit, CPUPeriod: 100000, PidsLimit: cgroups.NoLimit, MemoryHigh: cgroups.NoLimit}
	for _, cg := range []string{cgroups.KubepodsCgroup(root), cgroups.KubepodsCgroup(root) + "/besteffort"} {
		if err := cm.Ensure(ctx, cg, limit); err != nil {
			t.Fatal(err)
		}
	}

	// The live pods, as the pod workers would report them.
	var mu sync.Mutex
	live := map[types.UID]*v1.Pod{}
	active := func() []*v1.Pod {
		mu.Lock()
		defer mu.Unlock()
		out := make([]*v1.Pod, 0, len(live))
		for _, p := range live {
			out = append(out, p)
		}
		return out
	}

	// The eviction manager decides on every wake with a logger that counts
	// its lines (V(2) included: its "no decision" line).
	var logLines atomic.Int64
	var lastLine atomic.Value
	logger := funcr.New(func(prefix, args string) { logLines.Add(1); lastLine.Store(args) }, funcr.Options{Verbosity: 4})
	th, errs := eviction.ParseThresholds(eviction.Config{Hard: map[string]string{"memory.available": "1Ki"}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var decisions atomic.Int64
	m, err := eviction.NewManager(eviction.ManagerConfig{
		Thresholds: th, Tick: time.Millisecond,
		Stats: func(ctx context.Context, ps []*v1.Pod) (eviction.Stats, error) {
			decisions.Add(1)
			return es.read(ctx, ps)
		},
		ActivePods: active,
		Evict: func(context.Context, *v1.Pod, eviction.Eviction) error {
			return errors.New("no pod may be evicted here")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(klog.NewContext(ctx, logger))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); m.Run(runCtx) }()

	// Readers of their own: the stats read and the cgroup reader on every
	// live pod, each error counted by kind.
	var reads, readErrs, notFound, otherErrs atomic.Int64
	var otherErr atomic.Value
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var cs cgroups.CgroupStats
			for runCtx.Err() == nil {
				ps := active()
				if _, err := es.read(runCtx, ps); err != nil && runCtx.Err() == nil {
					readErrs.Add(1)
					otherErr.Store(err)
				}
				for _, p := range ps {
					cg := cgroups.PodCgroup(root, cgroups.BestEffort, string(p.UID))
					reads.Add(1)
					switch err := r.Cgroup(runCtx, cg+"/ctr", cgroups.StatAll, &cs); {
					case err == nil:
					case errors.Is(err, cgroups.ErrCgroupNotFound):
						notFound.Add(1)
					case runCtx.Err() != nil:
					default:
						otherErrs.Add(1)
						otherErr.Store(err)
					}
				}
			}
		}()
	}

	start := time.Now()
	for i := range nPods {
		uid := types.UID(fmt.Sprintf("vanish-%04d", i))
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: string(uid), Namespace: "default", UID: uid},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
		cg := cgroups.PodCgroup(root, cgroups.BestEffort, string(uid))
		if err := cm.Ensure(ctx, cg, limit); err != nil {
			t.Fatal(err)
		}
		if err := cm.Ensure(ctx, cg+"/ctr", limit); err != nil {
			t.Fatal(err)
		}
		pl.Cache().Set(uid, &runtime.PodStatus{UID: uid, Containers: []*runtime.ContainerStatus{{ID: "ctr", Name: "app", State: runtime.ContainerRunning}}}, time.Now())
		mu.Lock()
		live[uid] = pod
		mu.Unlock()
		m.Wake()
		// Deleted while the readers sweep: the cgroups go first, the pod
		// leaves the list after, as when a runtime removes a pod under
		// the agent.
		if err := cm.Remove(ctx, cg); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			mu.Lock()
			delete(live, uid)
			mu.Unlock()
			pl.Cache().Delete(uid)
		}
		if i%2 == 1 { // the other half stays listed a little longer
			mu.Lock()
			delete(live, types.UID(fmt.Sprintf("vanish-%04d", i-1)))
			delete(live, uid)
			mu.Unlock()
			pl.Cache().Delete(uid)
		}
	}
	took := time.Since(start)
	// No stale stats: with every pod gone, a read has none.
	final, err := es.read(ctx, active())
	if err != nil {
		t.Errorf("stats read after the pods went: %v", err)
	}
	if len(final.Pods) != 0 {
		t.Errorf("%d pods still have stats after every pod went", len(final.Pods))
	}
	stop()
	wg.Wait()

	if n := readErrs.Load(); n > 0 {
		t.Errorf("%d stats reads failed; last: %v", n, otherErr.Load())
	}
	if n := otherErrs.Load(); n > 0 {
		t.Errorf("%d cgroup reads failed with something other than ErrCgroupNotFound; last: %v", n, otherErr.Load())
	}
	// The manager only logs a decision it could not make; with the node
	// stats readable there is none, whatever the pods do.
	if n := logLines.Load(); n > 0 {
		t.Errorf("the eviction manager logged %d lines over %d decisions; last: %v", n, decisions.Load(), lastLine.Load())
	}
	if leftover := cgroupfs.PodDirs(cgroups.PodCgroup(root, cgroups.BestEffort, "vanish-0999")); len(leftover) > 0 {
		t.Errorf("cgroup left: %v", leftover)
	}
	if decisions.Load() < 10 || reads.Load() < 10 {
		t.Errorf("too few reads to mean anything: %d decisions, %d cgroup reads", decisions.Load(), reads.Load())
	}
	t.Logf("%d pods created and removed in %v under %d eviction decisions and %d cgroup reads (%d of a vanished cgroup): no error, %d log lines",
		nPods, took.Round(time.Millisecond), decisions.Load(), reads.Load(), notFound.Load(), logLines.Load())
}
