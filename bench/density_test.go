package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/images"
)

// Density (issue 29): pod start, readiness and deletion at density, the
// real kubelet v1.37.2 and then `kernelet run`, each as a node of its own
// against the same kube-apiserver and containerd with the same
// KubeletConfiguration (nodeAgent, as BenchmarkFootprint). Per agent, in
// order:
//
//   - burst N: N API pods created at once (30; $KERNELET_DENSITY_BURSTS,
//     e.g. "30,110", adds the heavy 110), the first of them with an init
//     container and an exec readiness probe, until all are Ready; then all
//     deleted at once, until all are gone;
//   - idle (only with $KERNELET_DENSITY_IDLE, e.g. 30s): densityBurst
//     pods created at once, and once Ready and settled the agent's CPU
//     over that long with nothing happening; then all deleted;
//   - steady: 2 pods/s for 2 minutes ($KERNELET_DENSITY_STEADY, 0 skips
//     it), each deleted densityLifetime after its creation (the node stays
//     below maxPods: ~60 pods live), the last ones deleted at the end.
//
// Measured from outside, as a user sees it: create → Running and
// create → Ready as observed by a watch of the node's pods (from just
// before the create request), delete → gone (the watch's DELETED event,
// from just before the delete request); the agent's own
// kubelet_pod_start_sli_duration_seconds (its delta over the phase,
// quantiles interpolated within the histogram's buckets as PromQL's
// histogram_quantile); the agent's CPU time (user+system) per phase and
// for the whole run, its peak RSS (VmHWM); the API server's requests
// (apiserver_request_total deltas by verb, resource and subresource, over
// the agent's whole run, less the benchmark's own requests, counted by its
// client) per pod created, the PATCHes of pods/status among them. Ratios
// are kernelet/kubelet of the same run.
//
// Pods use the host network (the pod network's cost is CNI's, alike for
// both) and the testbox image, present in containerd (no pull).
// $KERNELET_DENSITY_AGENTS=kernelet measures one agent alone,
// $KERNELET_DENSITY_RUNS repeats the pair (each run's ratios are printed),
// $KERNELET_DENSITY_PROFILE=DIR saves each agent's pprof CPU, block and
// allocation profiles over the first densityProfileSeconds of each burst,
// the idle window and the steady phase's creations
// (enableContentionProfiling on: it costs CPU, so a profiled run's CPU
// figures are not comparable with an unprofiled one).
// Not in `make test`: `make bench-density` runs it.
const (
	densityBurst    = 30
	densityRate     = 2.0 // pods per second in the steady phase
	densitySteady   = 2 * time.Minute
	densityLifetime = 30 * time.Second
	densityTimeout  = 10 * time.Minute
	// densityProfileSeconds is the length of each burst's profiles (the
	// idle and steady phases' span their own length).
	densityProfileSeconds = 20
	// densityIdleSettle is how long the idle phase waits after its pods
	// are Ready before it measures (the pods' status writes are done).
	densityIdleSettle = 5 * time.Second
)

// densityPod is one pod's life as the benchmark saw it.
type densityPod struct {
	name                    string
	created, running, ready time.Time // create request sent; watch saw Running, Ready
	deleted, gone           time.Time // delete request sent; watch saw DELETED
	probed                  bool      // the pod with an init container and a probe
	failed                  string    // the reason the watch saw it Failed
}

// densityPhase is one phase of one agent's run.
type densityPhase struct {
	name string
	pods []*densityPod
	cpu  time.Duration // the agent's CPU time over the phase
	sli  histogram     // kubelet_pod_start_sli_duration_seconds delta
	took time.Duration
	// starting is a burst's span from its first create request to its
	// last pod Ready; startBusy the node's busy CPU time over it, every
	// process (agent, runtime, shims, runc, and on this machine the API
	// server and etcd) on every one of its cores: with the cores busy
	// throughout, the burst's makespan is bound by the work all of them
	// do.
	starting, startBusy time.Duration
	cores               int
}

// densityRun is one agent's whole run.
type densityRun struct {
	agent   string
	phases  []*densityPhase
	cpu     time.Duration // from the agent's start to its last phase's end
	peakRSS int64         // VmHWM, bytes
	api     map[apiKey]float64
	cri     map[string]float64 // kubelet_runtime_operations_total by operation_type
	pods    int                // pods created
}

func BenchmarkDensity(b *testing.B) {
	env.RequireRoot(b)
	agents := agentsFromEnv(b, "KERNELET_DENSITY_AGENTS")
	kubelet, version := realKubelet(), ""
	if slices.Contains(agents, "kubelet") {
		if fi, err := os.Stat(kubelet); err != nil || fi.IsDir() {
			b.Skipf("no kubelet at %s (set KERNELET_KUBELET_BIN, or KUBELET=1 hack/apiserver/build.sh; make bench-density does)", kubelet)
		}
		version = kubeletVersion(kubelet)
	}
	cd, srv, _, rs := benchCluster(b)
	counter := &requestCounter{}
	admin := counter.client(b, srv.AdminRESTConfig())
	ns := benchNamespace(b.Context(), b, admin, "density")
	waitNamespaceSettled(b, admin, ns)
	bursts := densityBursts(b)
	steady := envDurationZero(b, "KERNELET_DENSITY_STEADY", densitySteady)
	idle := envDurationZero(b, "KERNELET_DENSITY_IDLE", 0)
	runs := envInt(b, "KERNELET_DENSITY_RUNS", 1)
	profile := os.Getenv("KERNELET_DENSITY_PROFILE")
	var all [][]*densityRun
	for i := range runs {
		var pair []*densityRun
		for _, name := range agents {
			a := &nodeAgent{
				name: name, ns: ns, admin: admin, rs: rs, endpoint: cd.Endpoint(), srv: srv,
				node:       strings.ToLower(env.RunID()) + "-dn-" + name,
				cgroupRoot: "/" + env.RunID() + "-dn-" + name,
				tag:        fmt.Sprintf("%s%d", name[:4], i),
				bin:        kubelet,
			}
			a.podPrefix = "dn-" + a.tag + "-"
			// The kit's eviction thresholds (1 %): kubelet's defaults (imagefs
			// 15 %) put a shared machine's disk under pressure, and both
			// agents then reject the pods.
			a.evictionConfig = footprintEviction
			if name == "kernelet" {
				a.bin = kerneletBinary(b)
			}
			if profile != "" {
				a.extraConfig = "enableContentionProfiling: true\n"
			}
			r := runDensity(b, a, counter, densityPlan{bursts: bursts, idle: idle, steady: steady, rate: densityRate}, profile)
			b.Logf("density run %d, %s: %s", i+1, name, r.summary())
			pair = append(pair, r)
		}
		all = append(all, pair)
		b.Logf("density run %d of %d (kubelet %s, kernelet %s; %s):\n%s", i+1, runs, version, kerneletRevision(), densityMachine(), densityTable(pair))
	}
	if runs > 1 && len(agents) == 2 {
		b.Logf("density: kernelet/kubelet ratios of each run:\n%s", densityVariance(all))
	}
}

// densityBursts is $KERNELET_DENSITY_BURSTS (pod counts, 1 to 110) or
// densityBurst alone.
func densityBursts(b *testing.B) []int {
	s := os.Getenv("KERNELET_DENSITY_BURSTS")
	if s == "" {
		return []int{densityBurst}
	}
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 110 {
			b.Fatalf("KERNELET_DENSITY_BURSTS=%q: want pod counts from 1 to 110, e.g. 30,110", s)
		}
		out = append(out, n)
	}
	return out
}

// envDurationZero is envDuration that also takes "0" (skip).
func envDurationZero(b *testing.B, name string, def time.Duration) time.Duration {
	if os.Getenv(name) == "0" {
		return 0
	}
	return envDuration(b, name, def)
}

// waitNamespaceSettled waits until the controllers have made the
// namespace's default ServiceAccount and kube-root-ca.crt ConfigMap, so
// that their requests are not counted in the first agent's window.
func waitNamespaceSettled(b *testing.B, admin kubernetes.Interface, ns string) {
	b.Helper()
	ctx := b.Context()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		_, errSA := admin.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		_, errCM := admin.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if errSA == nil && errCM == nil {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("namespace %s: no default ServiceAccount or kube-root-ca.crt after 1m: %v, %v", ns, errSA, errCM)
		}
	}
}

// realKubelet is $KERNELET_KUBELET_BIN, else the kubelet that
// hack/apiserver/build.sh builds (KUBELET=1) at the API server's version.
func realKubelet() string {
	if p := os.Getenv("KERNELET_KUBELET_BIN"); p != "" {
		return p
	}
	return filepath.Join(env.CacheDir(), "kubernetes", evictionKubeletVersion, "kubelet")
}

// densityPlan is the phases of one agent's run: the bursts' sizes, the
// idle phase's and the steady phase's lengths (0: none), the steady
// phase's pods per second.
type densityPlan struct {
	bursts       []int
	idle, steady time.Duration
	rate         float64
}

// runDensity runs one agent on this machine through every phase and
// removes everything.
func runDensity(b *testing.B, a *nodeAgent, counter *requestCounter, plan densityPlan, profile string) *densityRun {
	b.Helper()
	return measureDensity(b, a, counter, plan, profile, func() {
		a.prepare(b)
		a.start(b)
		a.waitNodeReady(b)
	}, func() { a.cleanup(b) })
}

// measureDensity starts the agent (up), runs it through every phase and
// stops it (down), counting the API server's requests over it all.
func measureDensity(b *testing.B, a *nodeAgent, counter *requestCounter, plan densityPlan, profile string, up, down func()) *densityRun {
	b.Helper()
	ctx := b.Context()
	api0, err := scrapeRequests(ctx, a.admin)
	if err != nil {
		b.Fatal(err)
	}
	own0 := counter.snapshot()
	up()
	w := watchNodePods(b, a)
	r := &densityRun{agent: a.name}
	for _, n := range plan.bursts {
		r.phases = append(r.phases, a.burst(b, w, n, profile))
	}
	if plan.idle > 0 {
		r.phases = append(r.phases, a.idle(b, w, densityBurst, plan.idle, profile))
	}
	if plan.steady > 0 {
		r.phases = append(r.phases, a.steady(b, w, plan.steady, plan.rate, profile))
	}
	r.cpu = a.agentCPU(b)
	r.cri = a.scrapeCRI(b)
	r.peakRSS = a.agentPeakRSS(b)
	w.stop()
	down()
	time.Sleep(time.Second) // the API server counts a watch when it ends: let the agent's end
	api1, err := scrapeRequests(ctx, a.admin)
	if err != nil {
		b.Fatal(err)
	}
	r.api = subtractRequests(api1, api0, counter.snapshot(), own0)
	for _, ph := range r.phases {
		r.pods += len(ph.pods)
	}
	return r
}

// densityPodSpec is a host-network testbox pod on the agent's node; the
// probed one has an init container and an exec readiness probe (period 1
// s).
func (a *nodeAgent) densityPodSpec(name string, probed bool) *v1.Pod {
	no := false
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.ns},
		Spec: v1.PodSpec{
			NodeName:                     a.node,
			HostNetwork:                  true,
			DNSPolicy:                    v1.DNSDefault,
			AutomountServiceAccountToken: &no,
			Tolerations:                  []v1.Toleration{{Operator: v1.TolerationOpExists}},
			Containers: []v1.Container{{
				Name: "app", Image: images.TestboxImage, ImagePullPolicy: v1.PullIfNotPresent, Args: []string{"sleep"},
			}},
		},
	}
	if probed {
		exit0 := []string{"/testbox", "exit", "--code", "0"}
		pod.Spec.InitContainers = []v1.Container{{
			Name: "init", Image: images.TestboxImage, ImagePullPolicy: v1.PullIfNotPresent, Command: exit0,
		}}
		pod.Spec.Containers[0].ReadinessProbe = &v1.Probe{
			ProbeHandler:  v1.ProbeHandler{Exec: &v1.ExecAction{Command: exit0}},
			PeriodSeconds: 1,
		}
	}
	return pod
}

// create sends the pod's create request (retrying while the namespace's
// default ServiceAccount does not exist yet) and records when.
func (a *nodeAgent) create(ctx context.Context, w *podWatch, p *densityPod) error {
	w.add(p)
	pod := a.densityPodSpec(p.name, p.probed)
	for deadline := time.Now().Add(30 * time.Second); ; {
		w.locked(func() { p.created = time.Now() })
		_, err := a.admin.CoreV1().Pods(a.ns).Create(ctx, pod, metav1.CreateOptions{})
		if err == nil {
			return nil
		}
		if apierrors.IsAlreadyExists(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("create pod %s: %w", p.name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// remove sends the pod's delete request (the pod's own grace period) and
// records when.
func (a *nodeAgent) remove(ctx context.Context, w *podWatch, p *densityPod) error {
	w.locked(func() { p.deleted = time.Now() })
	if err := a.admin.CoreV1().Pods(a.ns).Delete(ctx, p.name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete pod %s: %w", p.name, err)
	}
	return nil
}

// burst creates n pods at once, waits until all are Ready, deletes them
// all at once and waits until all are gone.
func (a *nodeAgent) burst(b *testing.B, w *podWatch, n int, profile string) *densityPhase {
	b.Helper()
	ctx := b.Context()
	ph := &densityPhase{name: fmt.Sprintf("burst %d", n)}
	for i := range n {
		ph.pods = append(ph.pods, &densityPod{name: fmt.Sprintf("%sb%d-%03d", a.podPrefix, n, i), probed: i == 0})
	}
	sli0 := a.scrapeSLI(b)
	cpu0, start := a.agentCPU(b), time.Now()
	stopProfiles := a.profile(b, profile, fmt.Sprintf("burst%d", n), densityProfileSeconds)
	busy0 := a.machineBusy(b)
	a.all(b, ph.pods, func(p *densityPod) error { return a.create(ctx, w, p) })
	w.waitFor(b, a, ph.pods, "Ready", func(p *densityPod) bool { return !p.ready.IsZero() })
	ph.starting, ph.startBusy, ph.cores = time.Since(start), a.machineBusy(b)-busy0, a.machineCores()
	a.all(b, ph.pods, func(p *densityPod) error { return a.remove(ctx, w, p) })
	w.waitFor(b, a, ph.pods, "gone", func(p *densityPod) bool { return !p.gone.IsZero() })
	ph.took, ph.cpu = time.Since(start), a.agentCPU(b)-cpu0
	ph.sli = a.scrapeSLI(b).sub(sli0)
	stopProfiles()
	return ph
}

// idle creates n pods at once, waits until all are Ready and then
// densityIdleSettle more, measures the agent's CPU over d with nothing
// happening (the phase's CPU is that window's alone: relists,
// housekeeping, probes of nothing, status), then deletes them all and
// waits until all are gone.
func (a *nodeAgent) idle(b *testing.B, w *podWatch, n int, d time.Duration, profile string) *densityPhase {
	b.Helper()
	ctx := b.Context()
	ph := &densityPhase{name: fmt.Sprintf("idle %d pods for %v", n, d)}
	for i := range n {
		ph.pods = append(ph.pods, &densityPod{name: fmt.Sprintf("%si%d-%03d", a.podPrefix, n, i)})
	}
	sli0, start := a.scrapeSLI(b), time.Now()
	a.all(b, ph.pods, func(p *densityPod) error { return a.create(ctx, w, p) })
	w.waitFor(b, a, ph.pods, "Ready", func(p *densityPod) bool { return !p.ready.IsZero() })
	time.Sleep(densityIdleSettle)
	stopProfiles := a.profile(b, profile, "idle", int(d.Seconds()))
	cpu0 := a.agentCPU(b)
	time.Sleep(d)
	ph.cpu = a.agentCPU(b) - cpu0
	stopProfiles()
	a.all(b, ph.pods, func(p *densityPod) error { return a.remove(ctx, w, p) })
	w.waitFor(b, a, ph.pods, "gone", func(p *densityPod) bool { return !p.gone.IsZero() })
	ph.took = time.Since(start)
	ph.sli = a.scrapeSLI(b).sub(sli0)
	return ph
}

// all runs f for every pod at once and fails on the first error.
func (a *nodeAgent) all(b *testing.B, pods []*densityPod, f func(*densityPod) error) {
	b.Helper()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	start := make(chan struct{})
	for _, p := range pods {
		wg.Go(func() {
			<-start
			if err := f(p); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if len(errs) > 0 {
		b.Fatalf("%s: %v (and %d more)", a.name, errs[0], len(errs)-1)
	}
}

// steady creates rate pods per second for d, deletes each
// densityLifetime after its creation (the last ones at the end, once
// Ready) and waits until all are gone.
func (a *nodeAgent) steady(b *testing.B, w *podWatch, d time.Duration, rate float64, profile string) *densityPhase {
	b.Helper()
	ctx := b.Context()
	ph := &densityPhase{name: fmt.Sprintf("steady %g/s for %v", rate, d)}
	sli0 := a.scrapeSLI(b)
	cpu0, start := a.agentCPU(b), time.Now()
	defer a.profile(b, profile, "steady", int(d.Seconds()))()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for i := 0; time.Since(start) < d; i++ {
		p := &densityPod{name: fmt.Sprintf("%ss-%04d", a.podPrefix, i)}
		ph.pods = append(ph.pods, p)
		wg.Go(func() {
			if err := a.create(ctx, w, p); err != nil {
				fail(err)
				return
			}
			select {
			case <-time.After(densityLifetime):
			case <-ctx.Done():
				return
			}
			// Not before the pod was Ready: a pod deleted before it
			// started measures nothing.
			ready := w.until(ctx, densityTimeout, func() bool { return !p.ready.IsZero() || p.failed != "" })
			if f := w.failedPod([]*densityPod{p}); f != nil {
				fail(fmt.Errorf("pod %s not Ready: %s", p.name, f.failed))
				return
			}
			if !ready {
				fail(fmt.Errorf("pod %s not Ready within %v", p.name, densityTimeout))
				return
			}
			if err := a.remove(ctx, w, p); err != nil {
				fail(err)
			}
		})
		<-tick.C
	}
	wg.Wait()
	if len(errs) > 0 {
		b.Fatalf("%s: %v (and %d more)\n%s", a.name, errs[0], len(errs)-1, a.logTail())
	}
	w.waitFor(b, a, ph.pods, "gone", func(p *densityPod) bool { return !p.gone.IsZero() })
	ph.took, ph.cpu = time.Since(start), a.agentCPU(b)-cpu0
	ph.sli = a.scrapeSLI(b).sub(sli0)
	return ph
}

// podWatch follows the node's pods from one watch (re-opened from the
// last resourceVersion when the API server ends it) and records when each
// pod was first Running, first Ready and gone.
type podWatch struct {
	mu     sync.Mutex
	pods   map[string]*densityPod
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

func watchNodePods(b *testing.B, a *nodeAgent) *podWatch {
	b.Helper()
	ctx, cancel := context.WithCancel(b.Context())
	w := &podWatch{pods: map[string]*densityPod{}, cancel: cancel, done: make(chan struct{})}
	opts := metav1.ListOptions{FieldSelector: "spec.nodeName=" + a.node}
	l, err := a.admin.CoreV1().Pods(a.ns).List(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	opts.ResourceVersion = l.ResourceVersion
	go w.run(ctx, a.admin, a.ns, opts)
	b.Cleanup(w.stop)
	return w
}

func (w *podWatch) run(ctx context.Context, admin kubernetes.Interface, ns string, opts metav1.ListOptions) {
	defer close(w.done)
	for ctx.Err() == nil {
		wi, err := admin.CoreV1().Pods(ns).Watch(ctx, opts)
		if err != nil {
			w.fail(err)
			return
		}
		for ev := range wi.ResultChan() {
			if ev.Type == watch.Error {
				w.fail(apierrors.FromObject(ev.Object))
				wi.Stop()
				return
			}
			pod, ok := ev.Object.(*v1.Pod)
			if !ok {
				continue
			}
			opts.ResourceVersion = pod.ResourceVersion
			w.observe(ev.Type, pod, time.Now())
		}
		wi.Stop()
	}
}

func (w *podWatch) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = fmt.Errorf("pod watch: %w", err)
	}
}

func (w *podWatch) observe(t watch.EventType, pod *v1.Pod, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.pods[pod.Name]
	if p == nil {
		return
	}
	if t == watch.Deleted {
		p.gone = now
		return
	}
	if p.running.IsZero() && pod.Status.Phase == v1.PodRunning {
		p.running = now
	}
	if pod.Status.Phase == v1.PodFailed && p.failed == "" && p.deleted.IsZero() {
		p.failed = fmt.Sprintf("Failed: %s: %s", pod.Status.Reason, pod.Status.Message)
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady && c.Status == v1.ConditionTrue && p.ready.IsZero() {
			p.ready = now
		}
	}
}

func (w *podWatch) add(p *densityPod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pods[p.name] = p
}

// locked runs f (which reads or sets the times of pods) under the
// watch's lock.
func (w *podWatch) locked(f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f()
}

// until polls cond (run under the watch's lock) every 50 ms until it
// holds (true), or timeout or ctx (false).
func (w *podWatch) until(ctx context.Context, timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		ok := false
		w.locked(func() { ok = cond() })
		if ok {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitFor waits until done holds for every pod.
func (w *podWatch) waitFor(b *testing.B, a *nodeAgent, pods []*densityPod, what string, done func(*densityPod) bool) {
	b.Helper()
	left := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		n := 0
		for _, p := range pods {
			if !done(p) {
				n++
			}
		}
		return n
	}
	a.wait(b, densityTimeout, fmt.Sprintf("%d pods %s", len(pods), what), func() (bool, error) {
		w.mu.Lock()
		err := w.err
		w.mu.Unlock()
		if err != nil {
			b.Fatal(err)
		}
		if p := w.failedPod(pods); p != nil {
			b.Fatalf("%s: pod %s %s\n%s", a.name, p.name, p.failed, a.logTail())
		}
		n := left()
		return n == 0, fmt.Errorf("%d of %d pods not %s", n, len(pods), what)
	})
}

// failedPod is a pod of pods the watch saw Failed, nil when none.
func (w *podWatch) failedPod(pods []*densityPod) *densityPod {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range pods {
		if p.failed != "" {
			return p
		}
	}
	return nil
}

func (w *podWatch) stop() {
	w.cancel()
	<-w.done
}

// parseBusy is the busy CPU time of every core since boot from
// /proc/stat's content (its user, nice, system, irq, softirq and steal;
// idle and iowait are not busy).
func parseBusy(stat string) (time.Duration, error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: first line %q", line)
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %q: %w", line, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / 100, nil // USER_HZ
}
