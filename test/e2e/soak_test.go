package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/test/env/containerd"
)

// Soak (issue 16): soakPods pods created and deleted in waves on one
// `kernelet run` for $KERNELET_SOAK (default soakDefault; `make soak`
// runs 10 minutes) per variant — API pods on the pod network through the
// real kube-apiserver, and static pods on the host network written to and
// removed from the manifest dir. The node first fills to soakPods pods;
// then each wave deletes the soakWave oldest, waits until the API server
// (API pods) or the agent (static pods) and the runtime hold nothing of
// them, and creates soakWave new ones, until the time is up; then every pod
// is deleted.
//
// Read from outside as an operator would: go_goroutines and
// process_open_fds from the read-only port's /metrics, VmRSS from
// /proc/<pid>/status, the cgroup directories under the agent's cgroupRoot
// in every hierarchy. After the last pod is gone each must come back to
// its start value within soakBounds (waited for, up to soakReturn); and
// nothing of the pods may remain: CRI sandboxes and containers, pod dirs,
// log dirs, pod cgroups.
const (
	soakPods    = 110 // kubelet's default maxPods
	soakWave    = 22
	soakDefault = time.Minute
	// soakSettle is the idle time after the node is up before the start
	// values are read.
	soakSettle = 10 * time.Second
	soakReturn = 2 * time.Minute
	soakEvery  = 500 * time.Millisecond
)

// soakBounds are how far above its start value each metric may end: a
// leaked goroutine or fd per pod would exceed them within the first wave
// (soakPods + soakWave pods); the QoS cgroups are all that may stay. RSS:
// the Go runtime returns freed heap to the kernel only gradually, so the
// bound is relative.
var soakBounds = soakLimits{goroutines: 25, fds: 10, rssFactor: 1.5, cgroupDirs: 0}

type soakLimits struct {
	goroutines, fds, cgroupDirs int
	rssFactor                   float64
}

// soakSample is one reading of the agent from outside.
type soakSample struct {
	goroutines, fds, cgroupDirs int
	rss                         int64
	// Not bounded, shown to tell where RSS went: its anonymous and
	// file-backed parts, and the Go heap in use.
	anon, file, heap int64
}

// soakNode is what the driver needs of a variant.
type soakNode struct {
	*agentNode
	rs internalapi.RuntimeService
	// add creates the pods named; remove deletes them.
	add, remove func(t *testing.T, names []string)
	// list is every pod the source (API server or agent) has; a soak
	// pod's name there is its soak name and suffix.
	list   func(ctx context.Context) ([]v1.Pod, error)
	suffix string
}

func soakDuration(t *testing.T) time.Duration {
	t.Helper()
	s := os.Getenv("KERNELET_SOAK")
	if s == "" {
		return soakDefault
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.Fatalf("KERNELET_SOAK=%q: want a positive duration such as 10m", s)
	}
	return d
}

// TestSoak runs both variants one after the other.
func TestSoak(t *testing.T) {
	d := soakDuration(t)
	t.Run("API", func(t *testing.T) { soak(t, newSoakAPINode(t), d) })
	t.Run("Static", func(t *testing.T) { soak(t, newSoakStaticNode(t), d) })
}

func newSoakAPINode(t *testing.T) *soakNode {
	c := newClusterNode(t)
	c.start(t)
	c.waitNodeReady(t)
	s := &soakNode{agentNode: c.agentNode, rs: c.rs}
	s.add = func(t *testing.T, names []string) {
		for _, name := range names {
			p := apiTestPod(name, 1, "sleep")
			p.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists}}
			c.createPod(t, p)
		}
	}
	s.remove = func(t *testing.T, names []string) {
		grace := int64(1)
		for _, name := range names {
			err := c.admin.CoreV1().Pods(c.ns).Delete(t.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatalf("delete pod %s: %v", name, err)
			}
		}
	}
	s.list = func(ctx context.Context) ([]v1.Pod, error) {
		l, err := c.admin.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}
	return s
}

func newSoakStaticNode(t *testing.T) *soakNode {
	cd := containerd.Shared(t)
	n, rs, _ := newAgentWithCleanup(t, cd)
	n.start(t)
	staging := t.TempDir()
	s := &soakNode{agentNode: n, rs: rs}
	waitFor(t, time.Minute, "agent answers /pods", func() (bool, error) {
		_, err := n.pods(t.Context())
		return err == nil, err
	})
	s.add = func(t *testing.T, names []string) {
		for _, name := range names {
			staged := filepath.Join(staging, name+".yaml")
			writeManifest(t, staging, name+".yaml", podManifest(name, `["sleep"]`, "", 1))
			if err := os.Rename(staged, filepath.Join(n.manifests, name+".yaml")); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.remove = func(t *testing.T, names []string) {
		for _, name := range names {
			if err := os.Remove(filepath.Join(n.manifests, name+".yaml")); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.suffix = "-" + n.node
	s.list = func(ctx context.Context) ([]v1.Pod, error) {
		l, err := n.pods(ctx)
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}
	return s
}

// readyUIDs maps the soak pods among pods that are Running with every
// container ready to their UIDs, by name without suffix.
func readyUIDs(pods []v1.Pod, suffix string) map[string]types.UID {
	out := map[string]types.UID{}
	for _, p := range pods {
		name := strings.TrimSuffix(p.Name, suffix)
		if !strings.HasPrefix(name, "soak-") || p.DeletionTimestamp != nil || p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) == 0 {
			continue
		}
		ready := true
		for _, c := range p.Status.ContainerStatuses {
			ready = ready && c.Ready
		}
		if ready {
			out[name] = p.UID
		}
	}
	return out
}

func podNames(pods []v1.Pod, suffix string) map[string]bool {
	out := map[string]bool{}
	for _, p := range pods {
		if name := strings.TrimSuffix(p.Name, suffix); strings.HasPrefix(name, "soak-") {
			out[name] = true
		}
	}
	return out
}

// soak drives one variant for d and checks the return to the start
// values and that nothing of the pods remains.
func soak(t *testing.T, s *soakNode, d time.Duration) {
	time.Sleep(soakSettle) // the node's start-up work ends: a measurement pause, not a synchronisation
	start := s.sample(t)
	peak := newSoakPeak(start)
	stop := peak.follow(t, s)
	defer stop()

	began := time.Now()
	uids := map[string]types.UID{}
	var live []string
	next := 0
	create := func(n int) {
		var names []string
		for range n {
			names = append(names, fmt.Sprintf("soak-%04d", next))
			next++
		}
		s.add(t, names)
		s.waitRunning(t, names, uids)
		live = append(live, names...)
	}
	create(soakPods)
	filled := time.Since(began)
	// At least one wave; another only when it should end within d (as
	// long as the one before took), so that d bounds the test's time.
	waves, wave := 0, time.Duration(0)
	for waves == 0 || time.Since(began)+wave <= d {
		w := time.Now()
		old := live[:soakWave]
		live = live[soakWave:]
		s.remove(t, old)
		s.waitGone(t, old, uids)
		create(soakWave)
		waves, wave = waves+1, time.Since(w)
	}
	s.remove(t, live)
	s.waitGone(t, live, uids)
	t.Logf("%d pods created and deleted in %v: filled to %d in %v, then %d waves of %d (the last took %v)",
		next, time.Since(began).Round(time.Second), soakPods, filled.Round(time.Second), waves, soakWave, wave.Round(time.Second))
	stop()

	end := s.waitReturn(t, start)
	t.Logf("soak table (%s, %v):\n%s", t.Name(), d, soakTable(start, peak.max(), end, soakBounds))
	s.checkNothingLeft(t, uids)
}

// sample reads the agent as an operator would.
func (s *soakNode) sample(t *testing.T) soakSample {
	t.Helper()
	v, err := s.read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (s *soakNode) read(ctx context.Context) (soakSample, error) {
	var v soakSample
	m, err := soakMetrics(ctx, s.url("/metrics"))
	if err != nil {
		return v, err
	}
	v.goroutines, v.fds, v.heap = int(m["go_goroutines"]), int(m["process_open_fds"]), int64(m["go_memstats_heap_inuse_bytes"])
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return v, err
	}
	if v.rss, err = statusKB(string(st), "VmRSS"); err != nil {
		return v, err
	}
	v.anon, _ = statusKB(string(st), "RssAnon")
	v.file, _ = statusKB(string(st), "RssFile")
	v.cgroupDirs = countCgroupDirs(s.cgroupRoot)
	return v, nil
}

// waitRunning waits until every pod of names is Running and ready and
// records its UID; at the timeout the error names the pods that are not
// with their state (soakPodState).
func (s *soakNode) waitRunning(t *testing.T, names []string, uids map[string]types.UID) {
	t.Helper()
	waitFor(t, 5*time.Minute, fmt.Sprintf("%d pods Running (%s…)", len(names), names[0]), func() (bool, error) {
		pods, err := s.list(t.Context())
		if err != nil {
			return false, err
		}
		got := readyUIDs(pods, s.suffix)
		byName := map[string]*v1.Pod{}
		for i := range pods {
			byName[strings.TrimSuffix(pods[i].Name, s.suffix)] = &pods[i]
		}
		var missing []string
		for _, name := range names {
			if uid, ok := got[name]; ok {
				uids[name] = uid
			} else {
				missing = append(missing, name+" "+soakPodState(byName[name]))
			}
		}
		return len(missing) == 0, fmt.Errorf("%d of %d not Running and ready: %s", len(missing), len(names), firstN(missing, 5))
	})
}

// soakPodState is what a pod's status says of why it is not Running and
// ready: phase, conditions, each container's state.
func soakPodState(p *v1.Pod) string {
	if p == nil {
		return "(not listed)"
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "(uid %s, phase %q", p.UID, p.Status.Phase)
	if p.DeletionTimestamp != nil {
		sb.WriteString(", deleted")
	}
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(&sb, ", %s=%s", c.Type, c.Status)
		if c.Reason != "" {
			fmt.Fprintf(&sb, " (%s)", c.Reason)
		}
	}
	for _, c := range p.Status.ContainerStatuses {
		fmt.Fprintf(&sb, ", container %s ready=%v", c.Name, c.Ready)
		switch {
		case c.State.Waiting != nil:
			fmt.Fprintf(&sb, " waiting %s %q", c.State.Waiting.Reason, c.State.Waiting.Message)
		case c.State.Running != nil:
			sb.WriteString(" running")
		case c.State.Terminated != nil:
			fmt.Fprintf(&sb, " terminated %s exit %d", c.State.Terminated.Reason, c.State.Terminated.ExitCode)
		}
	}
	sb.WriteString(")")
	return sb.String()
}

// firstN joins the first n of items, saying how many more there are.
func firstN(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(items[:n], "; "), len(items)-n)
}

// waitGone waits until neither the pod source nor the runtime holds
// anything of the pods.
func (s *soakNode) waitGone(t *testing.T, names []string, uids map[string]types.UID) {
	t.Helper()
	waitFor(t, 3*time.Minute, fmt.Sprintf("%d pods gone (%s…)", len(names), names[0]), func() (bool, error) {
		pods, err := s.list(t.Context())
		if err != nil {
			return false, err
		}
		present := podNames(pods, s.suffix)
		held, err := runtimeUIDs(t.Context(), s.rs)
		if err != nil {
			return false, err
		}
		var left, inRuntime []string
		for _, name := range names {
			if present[name] {
				left = append(left, name)
			}
			if n := held[uids[name]]; n > 0 {
				inRuntime = append(inRuntime, fmt.Sprintf("%s (%s: %d)", name, uids[name], n))
			}
		}
		return len(left)+len(inRuntime) == 0, fmt.Errorf("%d still listed (%s), %d still in the runtime (%s)",
			len(left), firstN(left, 5), len(inRuntime), firstN(inRuntime, 5))
	})
}

// waitReturn waits until every metric is within its bound of start and
// returns the last reading (the test fails with it after soakReturn).
func (s *soakNode) waitReturn(t *testing.T, start soakSample) soakSample {
	t.Helper()
	var end soakSample
	waitFor(t, soakReturn, "return to the start values", func() (bool, error) {
		var err error
		if end, err = s.read(t.Context()); err != nil {
			return false, err
		}
		if over := soakOver(start, end, soakBounds); len(over) > 0 {
			return false, fmt.Errorf("over the bound: %s", strings.Join(over, ", "))
		}
		return true, nil
	})
	return end
}

// soakOver names the metrics of end above their bound over start.
func soakOver(start, end soakSample, b soakLimits) []string {
	var over []string
	if end.goroutines > start.goroutines+b.goroutines {
		over = append(over, fmt.Sprintf("goroutines %d > %d+%d", end.goroutines, start.goroutines, b.goroutines))
	}
	if end.fds > start.fds+b.fds {
		over = append(over, fmt.Sprintf("fds %d > %d+%d", end.fds, start.fds, b.fds))
	}
	if float64(end.rss) > float64(start.rss)*b.rssFactor {
		over = append(over, fmt.Sprintf("RSS %.1f MiB > %.1f×%.1f MiB", mibf(end.rss), b.rssFactor, mibf(start.rss)))
	}
	if end.cgroupDirs > start.cgroupDirs+b.cgroupDirs {
		over = append(over, fmt.Sprintf("cgroup dirs %d > %d+%d", end.cgroupDirs, start.cgroupDirs, b.cgroupDirs))
	}
	return over
}

func mibf(n int64) float64 { return float64(n) / (1 << 20) }

// soakTable prints metric, start, peak, end, bound.
func soakTable(start, peak, end soakSample, b soakLimits) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "| metric | start | peak | end | bound (end ≤) |\n|---|---:|---:|---:|---:|\n")
	row := func(name string, s, p, e int, bound string) {
		fmt.Fprintf(&sb, "| %s | %d | %d | %d | %s |\n", name, s, p, e, bound)
	}
	row("goroutines (go_goroutines)", start.goroutines, peak.goroutines, end.goroutines, fmt.Sprintf("start + %d = %d", b.goroutines, start.goroutines+b.goroutines))
	row("open fds (process_open_fds)", start.fds, peak.fds, end.fds, fmt.Sprintf("start + %d = %d", b.fds, start.fds+b.fds))
	fmt.Fprintf(&sb, "| RSS MiB (VmRSS) | %.1f | %.1f | %.1f | %.1f × start = %.1f |\n", mibf(start.rss), mibf(peak.rss), mibf(end.rss),
		b.rssFactor, mibf(start.rss)*b.rssFactor)
	fmt.Fprintf(&sb, "| of which anon / file MiB | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | (shown only) |\n",
		mibf(start.anon), mibf(start.file), mibf(peak.anon), mibf(peak.file), mibf(end.anon), mibf(end.file))
	fmt.Fprintf(&sb, "| Go heap in use MiB (go_memstats_heap_inuse_bytes) | %.1f | %.1f | %.1f | (shown only) |\n",
		mibf(start.heap), mibf(peak.heap), mibf(end.heap))
	row("cgroup dirs under cgroupRoot", start.cgroupDirs, peak.cgroupDirs, end.cgroupDirs, fmt.Sprintf("start + %d = %d", b.cgroupDirs, start.cgroupDirs+b.cgroupDirs))
	return sb.String()
}

// soakPeak keeps the highest reading of each metric.
type soakPeak struct {
	mu sync.Mutex
	v  soakSample
}

func newSoakPeak(start soakSample) *soakPeak { return &soakPeak{v: start} }

func (p *soakPeak) add(v soakSample) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.v.goroutines = max(p.v.goroutines, v.goroutines)
	p.v.fds = max(p.v.fds, v.fds)
	p.v.rss = max(p.v.rss, v.rss)
	p.v.cgroupDirs = max(p.v.cgroupDirs, v.cgroupDirs)
	p.v.anon, p.v.file, p.v.heap = max(p.v.anon, v.anon), max(p.v.file, v.file), max(p.v.heap, v.heap)
}

func (p *soakPeak) max() soakSample {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.v
}

// follow reads the agent every soakEvery until the returned stop is
// called (idempotent).
func (p *soakPeak) follow(t *testing.T, s *soakNode) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(soakEvery)
		defer tick.Stop()
		for {
			if v, err := s.read(ctx); err == nil {
				p.add(v)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { cancel(); <-done }) }
}

// checkNothingLeft: the runtime holds no sandbox or container of any soak
// pod, and the agent's pod dirs, log dirs and pod cgroups are gone.
func (s *soakNode) checkNothingLeft(t *testing.T, uids map[string]types.UID) {
	t.Helper()
	held, err := runtimeUIDs(t.Context(), s.rs)
	if err != nil {
		t.Fatal(err)
	}
	for name, uid := range uids {
		if held[uid] > 0 {
			t.Errorf("pod %s (%s): %d sandboxes/containers left in the runtime", name, uid, held[uid])
		}
	}
	for _, dir := range []string{filepath.Join(s.root, "pods"), s.logs} {
		ents, err := os.ReadDir(dir)
		if err != nil && !os.IsNotExist(err) {
			t.Error(err)
		}
		for _, e := range ents {
			t.Errorf("left behind: %s", filepath.Join(dir, e.Name()))
		}
	}
	for _, dir := range podCgroupDirs(s.cgroupRoot) {
		t.Errorf("pod cgroup left behind: %s", dir)
	}
}

// runtimeUIDs counts the sandboxes and containers the runtime holds per
// pod UID.
func runtimeUIDs(ctx context.Context, rs internalapi.RuntimeService) (map[types.UID]int, error) {
	out := map[types.UID]int{}
	sbs, err := rs.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, err
	}
	for _, sb := range sbs {
		out[types.UID(sb.Labels[podconfig.LabelPodUID])]++
	}
	cs, err := rs.ListContainers(ctx, &runtimeapi.ContainerFilter{})
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		out[types.UID(c.Labels[podconfig.LabelPodUID])]++
	}
	return out, nil
}
