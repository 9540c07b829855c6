package eviction

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func usage(b, i int64) *FsUsage { return &FsUsage{Bytes: b, Inodes: i} }

// storage: container app with a writable layer of rootfs MiB and logs
// MiB, emptyDir "data" of vol MiB.
func storage(rootfs, logs, vol int64, dedicated bool) *PodStorage {
	return &PodStorage{DedicatedImageFs: dedicated,
		Containers: map[string]ContainerStorage{"app": {Rootfs: usage(rootfs*mi, 10), Logs: usage(logs*mi, 2)}},
		Volumes:    map[string]FsUsage{"data": {Bytes: vol * mi, Inodes: 100}}}
}

func TestPodStorageOn(t *testing.T) {
	tests := map[string]struct {
		dedicated bool
		sig       Signal
		bytes     int64
		inodes    int64
	}{
		"shared fs, nodefs: everything":         {false, SignalNodeFsAvailable, 7 * mi, 112},
		"shared fs, imagefs: everything":        {false, SignalImageFsInodesFree, 7 * mi, 112},
		"dedicated, nodefs: logs and volumes":   {true, SignalNodeFsInodesFree, 6 * mi, 102},
		"dedicated, imagefs: writable layers":   {true, SignalImageFsAvailable, 1 * mi, 10},
		"dedicated, containerfs: like imagefs":  {true, SignalContainerFsAvailable, 1 * mi, 10},
		"dedicated, containerfs inodes: rootfs": {true, SignalContainerFsInodesFree, 1 * mi, 10},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			u := storage(1, 2, 4, tc.dedicated).On(tc.sig)
			if u.Bytes != tc.bytes || u.Inodes != tc.inodes {
				t.Fatalf("On(%s) = %+v, want %d bytes %d inodes", tc.sig, u, tc.bytes, tc.inodes)
			}
		})
	}
	if u := storage(1, 2, 4, true).Total(); u.Bytes != 7*mi {
		t.Fatalf("Total with a dedicated imagefs = %d, want everything", u.Bytes)
	}
	var nilStorage *PodStorage
	if u := nilStorage.On(SignalNodeFsAvailable); u != (FsUsage{}) {
		t.Fatalf("nil storage: %+v", u)
	}
}

func withVolume(name string, limit string, medium v1.StorageMedium) podOpt {
	return func(p *v1.Pod) {
		ed := &v1.EmptyDirVolumeSource{Medium: medium}
		if limit != "" {
			ed.SizeLimit = qty(limit)
		}
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{EmptyDir: ed}})
	}
}

func ephemeral(request, limit string) podOpt {
	return func(p *v1.Pod) {
		r := &p.Spec.Containers[0].Resources
		if request != "" {
			r.Requests = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse(request)}
		}
		if limit != "" {
			r.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse(limit)}
		}
	}
}

func TestCheckLocalStorage(t *testing.T) {
	tests := map[string]struct {
		pod     *v1.Pod
		st      *PodStorage
		signal  Signal
		message string
	}{
		"emptyDir over its sizeLimit": {
			pod: mkPod("p", withVolume("data", "3Mi", "")), st: storage(1, 1, 4, false),
			signal: SignalEmptyDirFsLimit, message: `Usage of EmptyDir volume "data" exceeds the limit "3Mi". `},
		"emptyDir at its sizeLimit":  {pod: mkPod("p", withVolume("data", "4Mi", "")), st: storage(1, 1, 4, false)},
		"emptyDir without sizeLimit": {pod: mkPod("p", withVolume("data", "", "")), st: storage(1, 1, 40, false)},
		"pod total over the containers' limits": {
			pod: mkPod("p", ephemeral("", "6Mi")), st: storage(1, 1, 5, false),
			signal: SignalEphemeralPodFsLimit, message: "Pod ephemeral local storage usage exceeds the total limit of containers 6Mi. "},
		"container over its limit (rootfs + logs), volume not counted": {
			pod: mkPod("p", ephemeral("", "6Mi"), func(p *v1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "side", Resources: v1.ResourceRequirements{
					Limits: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("100Mi")}}})
			}),
			st:     storage(4, 3, 1, false),
			signal: SignalEphemeralContainerFsLimit, message: `Container app exceeded its local ephemeral storage limit "6Mi". `},
		"container with a dedicated imagefs: logs only": {
			pod: mkPod("p", ephemeral("", "6Mi"), func(p *v1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "side", Resources: v1.ResourceRequirements{
					Limits: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("100Mi")}}})
			}),
			st: storage(4, 3, 1, true)},
		"no stats": {pod: mkPod("p", withVolume("data", "1Ki", ""))},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			v, ok := CheckLocalStorage(tc.pod, PodStats{Storage: tc.st})
			if ok != (tc.signal != "") || v.Signal != tc.signal || v.Message != tc.message {
				t.Fatalf("CheckLocalStorage = %+v %v, want %q %q", v, ok, tc.signal, tc.message)
			}
		})
	}
}

func TestRankDisk(t *testing.T) {
	small := mkPod("small")
	big := mkPod("big")
	requested := mkPod("requested", ephemeral("100Mi", ""))
	important := mkPod("important", prio(1000))
	nostats := mkPod("nostats")
	stats := map[types.UID]PodStats{
		small.UID:     {Storage: storage(1, 1, 1, false)},
		big.UID:       {Storage: storage(1, 1, 50, false)},
		requested.UID: {Storage: storage(1, 1, 60, false)},
		important.UID: {Storage: storage(1, 1, 80, false)},
	}
	got := names(RankDisk(SignalNodeFsAvailable, []*v1.Pod{small, requested, important, big, nostats}, stats))
	// No stats first; then over request (all but requested) by priority,
	// then usage; requested (within its request) last.
	want := []string{"nostats", "big", "small", "important", "requested"}
	if !slices.Equal(got, want) {
		t.Fatalf("rank %v, want %v", got, want)
	}
	// Inodes: nothing requests inodes, so everyone exceeds; the
	// ephemeral-storage request is still subtracted (kubelet's).
	ranked, ok := Rank(SignalNodeFsInodesFree, []*v1.Pod{small, requested, big}, stats)
	if got := names(ranked); !ok || !slices.Equal(got, []string{"small", "big", "requested"}) {
		t.Fatalf("inode rank %v", got)
	}
}

func TestNodeReclaimFor(t *testing.T) {
	both := []NodeReclaim{ReclaimContainers, ReclaimImages}
	tests := map[string]struct {
		s         Signal
		dedicated bool
		want      []NodeReclaim
	}{
		"memory":                       {SignalMemoryAvailable, false, nil},
		"pids":                         {SignalPIDAvailable, false, nil},
		"nodefs shared":                {SignalNodeFsAvailable, false, both},
		"nodefs inodes shared":         {SignalNodeFsInodesFree, false, both},
		"nodefs dedicated imagefs":     {SignalNodeFsAvailable, true, []NodeReclaim{ReclaimContainers}},
		"imagefs dedicated":            {SignalImageFsAvailable, true, both},
		"containerfs dedicated":        {SignalContainerFsInodesFree, true, both},
		"imagefs inodes, no dedicated": {SignalImageFsInodesFree, false, both},
	}
	for name, tc := range tests {
		if got := NodeReclaimFor(tc.s, tc.dedicated); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}

func TestObserveImageFs(t *testing.T) {
	obs := Observe(Stats{ImageFs: &FsStats{CapacityBytes: 100, AvailableBytes: 10, Inodes: 50, InodesFree: 5},
		ContainerFs: &FsStats{CapacityBytes: 200, AvailableBytes: 20}})
	if o := obs[SignalImageFsAvailable]; o.Available != 10 || o.Capacity != 100 {
		t.Fatalf("imagefs.available %+v", o)
	}
	if o := obs[SignalImageFsInodesFree]; o.Available != 5 || o.Capacity != 50 {
		t.Fatalf("imagefs.inodesFree %+v", o)
	}
	if o := obs[SignalContainerFsAvailable]; o.Available != 20 {
		t.Fatalf("containerfs.available %+v", o)
	}
	if _, ok := obs[SignalContainerFsInodesFree]; ok {
		t.Fatal("containerfs.inodesFree observed without inodes")
	}
}

func TestMessageEphemeralStorage(t *testing.T) {
	pod := mkPod("p", ephemeral("1Mi", ""))
	th := hard(SignalNodeFsAvailable, "10Mi")
	obs := Observations{SignalNodeFsAvailable: {Available: 5 * mi, Capacity: 64 * mi}}
	got := Message(v1.ResourceEphemeralStorage, pod, PodStats{Storage: storage(2, 1, 50, false)}, true, []Threshold{th}, obs)
	want := "The node was low on resource: ephemeral-storage. Threshold quantity: 10Mi, available: 5Mi. " +
		"Container app was using 3Mi, request is 1Mi, has larger consumption of ephemeral-storage. "
	if got != want {
		t.Fatalf("message\n%q\nwant\n%q", got, want)
	}
}

func TestEvictedStatusOfLocalStorage(t *testing.T) {
	st := EvictedStatusOf(v1.PodStatus{Phase: v1.PodRunning}, Eviction{Message: "m", NoDisruptionCondition: true}, time.Unix(1, 0))
	if st.Phase != v1.PodFailed || st.Reason != Reason || st.Message != "m" || len(st.Conditions) != 0 {
		t.Fatalf("status %+v", st)
	}
	st = EvictedStatusOf(v1.PodStatus{}, Eviction{Message: "m"}, time.Unix(1, 0))
	if len(st.Conditions) != 1 || st.Conditions[0].Type != v1.DisruptionTarget {
		t.Fatalf("conditions %+v", st.Conditions)
	}
}

// diskNode is a fake node for disk decisions: a root filesystem of
// capacity bytes shared by the pods' storage, plus what dead containers
// (reclaimable by container GC) hold.
type diskNode struct {
	mu       sync.Mutex
	capacity int64
	dead     int64
	// keepDead: container GC frees nothing (the dead containers not
	// removable yet).
	keepDead bool
	// released is the manager's DiskReleased (optional).
	released func(*v1.Pod) bool
	pods     []*v1.Pod
	storage  map[types.UID]*PodStorage
	evicted  []string
	evs      []Eviction
	gcs      []string
	events   []v1.ResourceName
}

func (n *diskNode) stats(_ context.Context, _ []*v1.Pod) (Stats, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := Stats{Time: time.Unix(0, 0), Pods: map[types.UID]PodStats{}}
	used := n.dead
	for uid, st := range n.storage {
		s.Pods[uid] = PodStats{Storage: st}
		used += st.Total().Bytes
	}
	s.NodeFs = &FsStats{CapacityBytes: n.capacity, AvailableBytes: n.capacity - used}
	return s, nil
}

func (n *diskNode) active() []*v1.Pod {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*v1.Pod
	for _, p := range n.pods {
		if !contains(n.evicted, p.Name) {
			out = append(out, p)
		}
	}
	return out
}

func (n *diskNode) evict(_ context.Context, pod *v1.Pod, e Eviction) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.evicted = append(n.evicted, pod.Name)
	n.evs = append(n.evs, e)
	return nil
}

func (n *diskNode) manager(t *testing.T, clk *clocktesting.FakeClock, isolation bool, ths ...Threshold) *Manager {
	t.Helper()
	m, err := NewManager(ManagerConfig{Thresholds: ths, PressureTransitionPeriod: time.Minute, Clock: clk,
		Stats: n.stats, ActivePods: n.active, Evict: n.evict, Metrics: NewMetrics(),
		LocalStorageCapacityIsolation: isolation, DiskReleased: n.released,
		ThresholdMet: func(r v1.ResourceName) {
			n.mu.Lock()
			defer n.mu.Unlock()
			n.events = append(n.events, r)
		},
		DeleteAllUnusedContainers: func(context.Context) error {
			n.mu.Lock()
			defer n.mu.Unlock()
			n.gcs = append(n.gcs, "containers")
			if !n.keepDead {
				n.dead = 0
			}
			return nil
		},
		DeleteUnusedImages: func(context.Context) error {
			n.mu.Lock()
			defer n.mu.Unlock()
			n.gcs = append(n.gcs, "images")
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestManagerDiskReclaimsBeforeEvicting(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
	writer, quiet := mkPod("writer"), mkPod("quiet")
	n := &diskNode{capacity: 64 * mi, dead: 20 * mi, pods: []*v1.Pod{quiet, writer},
		storage: map[types.UID]*PodStorage{writer.UID: storage(0, 0, 30, false), quiet.UID: storage(0, 1, 0, false)}}
	m := n.manager(t, clk, true, hard(SignalNodeFsAvailable, "20Mi"))

	// 64 − 20 − 30 − 1 = 13 MiB available: container GC frees the 20 MiB
	// of dead containers, and nothing is evicted.
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(n.gcs, []string{"containers", "images"}) || len(n.evicted) != 0 {
		t.Fatalf("gc %v evicted %v", n.gcs, n.evicted)
	}
	if !slices.Equal(n.events, []v1.ResourceName{v1.ResourceEphemeralStorage}) {
		t.Fatalf("EvictionThresholdMet events %v, want one before the node-level reclaim", n.events)
	}
	if c := m.Conditions(); !slices.Equal(c, []v1.NodeConditionType{v1.NodeDiskPressure}) {
		t.Fatalf("conditions %v", c)
	}

	// The writer grows to 50 MiB: 13 MiB available. Reclaim ran less than
	// NodeReclaimInterval ago: straight to eviction of the largest user.
	clk.Step(time.Second)
	n.storage[writer.UID] = storage(0, 0, 50, false)
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.gcs) != 2 || !slices.Equal(n.evicted, []string{"writer"}) {
		t.Fatalf("gc %v evicted %v", n.gcs, n.evicted)
	}
	e := n.evs[0]
	if e.Signal != SignalNodeFsAvailable || e.Resource != v1.ResourceEphemeralStorage || e.NoDisruptionCondition ||
		e.Message != "The node was low on resource: ephemeral-storage. Threshold quantity: 20Mi, available: 13Mi. " {
		t.Fatalf("eviction %+v", e)
	}

	// Past the cooldown (the writer no longer counts as freeing), still
	// under pressure and reclaim due again: GC is tried first.
	clk.Step(DefaultCooldown)
	n.storage[quiet.UID] = storage(0, 50, 0, false)
	delete(n.storage, writer.UID)
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.gcs) != 4 || !slices.Equal(n.evicted, []string{"writer", "quiet"}) {
		t.Fatalf("gc %v evicted %v", n.gcs, n.evicted)
	}
}

// A pod evicted for a disk signal frees its disk only when its dead
// containers are removed, not when its cgroup goes: once it has ended,
// the next decision runs the node-level reclaim again (not
// NodeReclaimInterval after the last) and evicts no other pod meanwhile.
func TestManagerDiskEvictedPodEnded(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
	writer, quiet := mkPod("writer"), mkPod("quiet")
	n := &diskNode{capacity: 64 * mi, pods: []*v1.Pod{quiet, writer},
		storage: map[types.UID]*PodStorage{writer.UID: storage(0, 0, 50, false), quiet.UID: storage(0, 1, 0, false)}}
	m := n.manager(t, clk, true, hard(SignalNodeFsAvailable, "20Mi"))

	// 13 MiB available: reclaim frees nothing, the writer is evicted.
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(n.gcs, []string{"containers", "images"}) || !slices.Equal(n.evicted, []string{"writer"}) {
		t.Fatalf("gc %v evicted %v", n.gcs, n.evicted)
	}
	// Still running: no other eviction, no reclaim (it ran just now).
	clk.Step(100 * time.Millisecond)
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.gcs) != 2 || len(n.evicted) != 1 {
		t.Fatalf("while the writer stops: gc %v evicted %v", n.gcs, n.evicted)
	}
	// Its container stopped: the runtime no longer measures its writable
	// layer (0 here), which is still on disk. Nobody else is evicted.
	clk.Step(100 * time.Millisecond)
	n.mu.Lock()
	n.storage[writer.UID] = storage(0, 0, 0, false)
	n.dead = 50 * mi
	n.mu.Unlock()
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.gcs) != 2 || len(n.evicted) != 1 {
		t.Fatalf("once its container stopped: gc %v evicted %v", n.gcs, n.evicted)
	}
	// It ended: no stats any more, its 50 MiB a dead container's.
	clk.Step(100 * time.Millisecond)
	n.mu.Lock()
	delete(n.storage, writer.UID)
	n.dead = 50 * mi
	n.mu.Unlock()
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.evicted) != 1 {
		t.Fatalf("evicted %v once the writer ended, want none more (its disk is being freed)", n.evicted)
	}
	// The decision that saw it ended counted its disk as being freed; the
	// next one runs container GC at once — which may find its containers
	// not removable yet (its end not recorded): tried again a second later.
	clk.Step(100 * time.Millisecond)
	n.mu.Lock()
	n.keepDead = true
	n.mu.Unlock()
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Step(100 * time.Millisecond)
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.gcs) != 4 || len(n.evicted) != 1 {
		t.Fatalf("after the writer ended, GC freeing nothing: gc %v evicted %v", n.gcs, n.evicted)
	}
	n.mu.Lock()
	n.keepDead = false
	n.mu.Unlock()
	clk.Step(time.Second)
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	n.gcs = slices.Delete(n.gcs, 2, 4)
	if !slices.Equal(n.gcs, []string{"containers", "images", "containers", "images"}) || len(n.evicted) != 1 || n.dead != 0 {
		t.Fatalf("after the writer ended: gc %v evicted %v dead %d", n.gcs, n.evicted, n.dead)
	}
	if c := m.Conditions(); !slices.Equal(c, []v1.NodeConditionType{v1.NodeDiskPressure}) {
		t.Fatalf("conditions %v (pressure stays for the transition period)", c)
	}
	// Freed: nothing more happens.
	clk.Step(100 * time.Millisecond)
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.gcs) != 4 || len(n.evicted) != 1 {
		t.Fatalf("once freed: gc %v evicted %v", n.gcs, n.evicted)
	}
}

// A pod evicted for a disk signal whose disk takes longer than the
// cooldown to be freed (its containers removed after 9 s and more under
// TCG, its writable layer deleted later still) counts as freeing — no
// bystander is evicted meanwhile — until DiskReleased says its containers
// and volumes are gone and the space shows as available; from then on it
// no longer counts, so a pod that fills the disk next is evicted without
// waiting for DiskCooldown. Never freed, it stops counting at
// DiskCooldown.
func TestManagerDiskEvictedPodHeldUntilFreed(t *testing.T) {
	for _, freed := range []bool{true, false} {
		t.Run(fmt.Sprintf("freed=%v", freed), func(t *testing.T) {
			ctx := context.Background()
			clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
			writer, quiet := mkPod("writer"), mkPod("quiet")
			n := &diskNode{capacity: 64 * mi, pods: []*v1.Pod{quiet, writer},
				storage: map[types.UID]*PodStorage{writer.UID: storage(0, 0, 50, false), quiet.UID: storage(0, 1, 0, false)}}
			gone := false
			n.released = func(*v1.Pod) bool {
				n.mu.Lock()
				defer n.mu.Unlock()
				return gone
			}
			m := n.manager(t, clk, true, hard(SignalNodeFsAvailable, "20Mi"))
			step := func(d time.Duration, what string, wantEvicted ...string) {
				t.Helper()
				clk.Step(d)
				if err := m.Synchronize(ctx); err != nil {
					t.Fatal(err)
				}
				n.mu.Lock()
				defer n.mu.Unlock()
				if !slices.Equal(n.evicted, wantEvicted) {
					t.Fatalf("%s (%v after the start): evicted %v, want %v", what, clk.Since(time.Unix(5000, 0)), n.evicted, wantEvicted)
				}
			}
			step(0, "13 MiB available", "writer")
			// It ended; its 50 MiB are a dead container's that GC cannot
			// remove yet: 13 MiB available still.
			n.mu.Lock()
			delete(n.storage, writer.UID)
			n.dead, n.keepDead = 50*mi, true
			n.mu.Unlock()
			for range 12 {
				step(time.Second, "while the writer's container is not removable", "writer")
			}
			// The runtime no longer lists it, but its writable layer is
			// still on disk (deleted later): still counted as freeing.
			n.mu.Lock()
			gone = true
			n.mu.Unlock()
			for range 13 {
				step(time.Second, "while the removed container's layer is still on disk", "writer")
			}
			if !freed {
				// Past DiskCooldown it no longer holds back: the quiet pod goes.
				step(5*time.Second, "past DiskCooldown", "writer", "quiet")
				return
			}
			// The layer is deleted: 63 MiB available.
			n.mu.Lock()
			n.keepDead = false
			n.mu.Unlock()
			step(time.Second, "once its disk is free", "writer")
			// The quiet pod fills the disk: 14 MiB available; the writer's
			// 50 MiB no longer count as being freed.
			n.mu.Lock()
			n.storage[quiet.UID] = storage(0, 50, 0, false)
			n.mu.Unlock()
			step(100*time.Millisecond, "the quiet pod filling the disk", "writer", "quiet")
		})
	}
}

func TestManagerLocalStorageLimits(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
	over := mkPod("over", withVolume("data", "8Mi", ""))
	within := mkPod("within", withVolume("data", "80Mi", ""))
	crit := mkPod("critical", withVolume("data", "1Mi", ""), static)
	n := &diskNode{capacity: 1 << 40, pods: []*v1.Pod{over, within, crit},
		storage: map[types.UID]*PodStorage{over.UID: storage(0, 0, 9, false), within.UID: storage(0, 0, 9, false),
			crit.UID: storage(0, 0, 9, false)}}

	m := n.manager(t, clk, false)
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.evicted) != 0 {
		t.Fatalf("evicted %v without localStorageCapacityIsolation", n.evicted)
	}

	m = n.manager(t, clk, true)
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(n.evicted, []string{"over"}) {
		t.Fatalf("evicted %v", n.evicted)
	}
	e := n.evs[0]
	if e.Signal != SignalEmptyDirFsLimit || !e.NoDisruptionCondition || *e.GracePeriod != HardGracePeriod ||
		e.Message != `Usage of EmptyDir volume "data" exceeds the limit "8Mi". ` {
		t.Fatalf("eviction %+v", e)
	}
	// Pending: not evicted twice.
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.evicted) != 1 {
		t.Fatalf("evicted %v", n.evicted)
	}
	if len(m.Status().Evictions) != 1 || m.Status().Evictions[0].Signal != SignalEmptyDirFsLimit {
		t.Fatalf("records %+v", m.Status().Evictions)
	}
}

func TestDiskNear(t *testing.T) {
	ths := []Threshold{hard(SignalMemoryAvailable, "100Mi"), hard(SignalNodeFsAvailable, "10Mi")}
	tests := map[string]struct {
		obs  Observations
		want bool
	}{
		"far":                      {Observations{SignalNodeFsAvailable: {Available: 30 * mi, Capacity: 64 * mi}}, false},
		"twice the threshold":      {Observations{SignalNodeFsAvailable: {Available: 15 * mi, Capacity: 64 * mi}}, false},
		"met":                      {Observations{SignalNodeFsAvailable: {Available: 9 * mi, Capacity: 64 * mi}}, true},
		"memory near is not disk":  {Observations{SignalMemoryAvailable: {Available: 1, Capacity: 64 * mi}}, false},
		"disk signal not observed": {Observations{}, false},
	}
	for name, tc := range tests {
		if got := DiskNear(ths, tc.obs); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}

// A decision that evicts for local storage limits ends there, as
// kubelet's: the disk threshold is acted on at the next decision.
func TestManagerLocalStorageFirst(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
	capped := mkPod("capped", withVolume("data", "1Mi", ""))
	big := mkPod("big")
	n := &diskNode{capacity: 64 * mi, pods: []*v1.Pod{capped, big},
		storage: map[types.UID]*PodStorage{capped.UID: storage(0, 0, 2, false), big.UID: storage(0, 0, 55, false)}}
	m := n.manager(t, clk, true, hard(SignalNodeFsAvailable, "10Mi"))
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(n.evicted, []string{"capped"}) || len(n.gcs) != 0 {
		t.Fatalf("evicted %v gc %v", n.evicted, n.gcs)
	}
	clk.Step(time.Second)
	if err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(n.evicted, []string{"capped", "big"}) || len(n.gcs) != 2 {
		t.Fatalf("evicted %v gc %v", n.evicted, n.gcs)
	}
}

// TestNoteFreed: pods evicted together for a disk signal share the rise of
// its available, in the order they were evicted; a pod the runtime still
// lists is never freed.
func TestNoteFreed(t *testing.T) {
	s := SignalNodeFsAvailable
	m := &Manager{pending: map[Signal]map[types.UID]pending{s: {
		"a":    {gone: true, availableAt: 10 * mi, usage: 40 * mi, seq: 1},
		"b":    {gone: true, availableAt: 10 * mi, usage: 40 * mi, seq: 2},
		"kept": {availableAt: 10 * mi, usage: 2 * mi, seq: 3},
	}}}
	freed := func() (out []string) {
		for _, uid := range slices.Sorted(maps.Keys(m.pending[s])) {
			if m.pending[s][uid].freed {
				out = append(out, string(uid))
			}
		}
		return out
	}
	for _, c := range []struct {
		available int64
		want      []string
	}{
		{29 * mi, nil},           // risen 19 MiB: less than half of a's 40
		{50 * mi, []string{"a"}}, // risen 40: a's; b's bar is now 40 + 20
		{69 * mi, []string{"a"}}, // 59 < 60
		{70 * mi, []string{"a", "b"}},
		{200 * mi, []string{"a", "b"}}, // kept: still listed by the runtime
	} {
		m.noteFreed(Observations{s: {Available: c.available, Capacity: 300 * mi}})
		if got := freed(); !slices.Equal(got, c.want) {
			t.Fatalf("available %d MiB: freed %v, want %v", c.available/mi, got, c.want)
		}
	}
}
