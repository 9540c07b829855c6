package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"

	"github.com/kernelet/kernelet/agent/config"
	"github.com/kernelet/kernelet/agent/nodeip"
	"github.com/kernelet/kernelet/agent/podsetup"
	kruntime "github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/agent/sources"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/cgroupfs"
	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// Pod start latency: from the instant a static pod manifest appears (an
// atomic rename into the directory) to the instant containerd records its
// container as started (CRI ContainerStatus.StartedAt), through `kernelet
// run` and through the same CRI calls made directly by the benchmark, with
// the same concurrency, in the same run (each mode twice, in the order
// kernelet, direct, direct, kernelet; percentiles over both rounds). Pods
// use the host network: pod networking through CNI is not what is
// compared.
const (
	podStartSequential = 20
	podStartBurst      = 30
	// podStartPoll is how often the runtime is listed for started
	// containers; the latency itself is containerd's StartedAt, so the poll
	// period only delays the next sequential pod.
	podStartPoll    = 5 * time.Millisecond
	podStartTimeout = 60 * time.Second
)

// podStartEnv is what both modes share: the CRI clients, the kernelet
// binary and its files, and the direct mode's own cgroup root and options,
// built from the same KubeletConfiguration kernelet loads.
type podStartEnv struct {
	rs       internalapi.RuntimeService
	is       internalapi.ImageManagerService
	endpoint string
	ctrdPid  int
	node     string

	bin, cfg, kRoot, kManifests, kCgroupRoot string
	port                                     int    // the read-only port
	securePort                               int    // the kubelet API (HTTPS, anonymous)
	staging                                  string // manifests are written here, then renamed

	dManifests, dLogs, dPods, dCgroupRoot string
	dCgroups                              kruntime.CgroupsAdapter
	dSync                                 kruntime.SyncOptions
	dMgr, kMgr                            *kruntime.Manager

	kernelet *kerneletProc // the running agent, nil when none
}

// podStart is one pod's measurement.
type podStart struct {
	name           string // full name, with "-<node>"
	file           string // manifest file name
	manifest       []byte
	wrote          time.Time // just before the rename
	sandboxID      string
	sandboxCreated time.Time // containerd's sandbox CreatedAt (RunPodSandbox received)
	created        time.Time // containerd's container CreatedAt (CreateContainer done)
	started        time.Time // containerd's container StartedAt
	reported       time.Time // GET /pods first said Running (kernelet only)
}

func (s *podStart) latency() time.Duration { return s.started.Sub(s.wrote) }

func BenchmarkPodStart(b *testing.B) {
	cd := containerd.Shared(b)
	e := newPodStartEnv(b, cd)
	for _, ph := range []struct {
		name  string
		n     int
		burst bool
	}{{"sequential", podStartSequential, false}, {"burst", podStartBurst, true}} {
		b.Run(ph.name, func(b *testing.B) {
			var (
				k, d       []*podStart
				kcpu, dcpu cpuUse
			)
			// kernelet, direct, direct, kernelet: a drift of the machine's
			// load during the run weighs on both modes alike.
			for i := range b.N {
				for j, mode := range []string{"k", "d", "d", "k"} {
					tag := fmt.Sprintf("%s-%s%d%d", ph.name[:3], mode, i, j)
					if mode == "k" {
						pods, use := e.runKernelet(b, tag, ph.n, ph.burst)
						k, kcpu.containerd, kcpu.kernelet = append(k, pods...), kcpu.containerd+use.containerd, kcpu.kernelet+use.kernelet
						continue
					}
					pods, use := e.runDirect(b, tag, ph.n, ph.burst)
					d, dcpu.containerd = append(d, pods...), dcpu.containerd+use.containerd
				}
			}
			label := fmt.Sprintf("%d sequential", ph.n)
			if ph.burst {
				label = fmt.Sprintf("%d-pod burst", ph.n)
			}
			reportPodStart(b, label, k, d, kcpu, dcpu)
		})
	}
}

func newPodStartEnv(b *testing.B, cd *containerd.Instance) *podStartEnv {
	b.Helper()
	ctx := b.Context()
	rs, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(cd.Endpoint()).WithConnectionTimeout(10 * time.Second).Build(ctx)
	if err != nil {
		b.Fatalf("CRI runtime client: %v", err)
	}
	is, err := remote.NewRemoteImageServiceBuilder().WithEndpoint(cd.Endpoint()).WithConnectionTimeout(10 * time.Second).Build(ctx)
	if err != nil {
		b.Fatalf("CRI image client: %v", err)
	}
	b.Cleanup(func() {
		_ = rs.Close(context.Background())
		_ = is.Close(context.Background())
	})
	dir := b.TempDir()
	e := &podStartEnv{
		rs: rs, is: is, endpoint: cd.Endpoint(), ctrdPid: cd.Pid(),
		node:        strings.ToLower(env.RunID()) + "-bench",
		bin:         kerneletBinary(b),
		cfg:         filepath.Join(dir, "config.yaml"),
		kRoot:       filepath.Join(dir, "k-root"),
		kManifests:  filepath.Join(dir, "k-manifests"),
		kCgroupRoot: "/" + env.RunID() + "-bench",
		port:        freePort(b),
		securePort:  freePort(b),
		staging:     filepath.Join(dir, "staging"),
		dManifests:  filepath.Join(dir, "d-manifests"),
		dLogs:       filepath.Join(dir, "d-logs"),
		dPods:       filepath.Join(dir, "d-root", "pods"),
		dCgroupRoot: "/" + env.RunID() + "-benchd",
	}
	for _, d := range []string{e.kManifests, e.staging, e.dManifests} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
# This host has cgroup v1 hierarchies (hybrid): kubelet's default refuses it.
failCgroupV1: false
cgroupRoot: %s
podLogsDir: %s
address: 127.0.0.1
port: %d
readOnlyPort: %d
healthzPort: %d
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
`, e.kCgroupRoot, filepath.Join(dir, "k-logs"), e.securePort, e.port, freePort(b))
	if err := os.WriteFile(e.cfg, []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}

	// Whatever happens: no agent, no pod, no cgroup of either root stays.
	// (Registered before anything is created, so it runs after the rest.)
	b.Cleanup(func() { e.cleanup(b) })

	h, err := cgroups.Discover()
	if err != nil {
		b.Fatal(err)
	}
	kcm, err := cgroups.NewManager(h, cgroups.ManagerConfig{CgroupRoot: e.kCgroupRoot})
	if err != nil {
		b.Fatal(err)
	}
	e.kMgr, err = kruntime.NewManager(kruntime.ManagerConfig{Runtime: rs, Images: is, Cgroups: kruntime.CgroupsAdapter{Manager: kcm},
		PodLogsDir: filepath.Join(dir, "k-logs"), PodsDir: filepath.Join(e.kRoot, "pods")})
	if err != nil {
		b.Fatal(err)
	}

	// The direct mode: what agent.startPods sets up, from the same
	// configuration file, under its own cgroup root.
	c, err := config.Load(e.cfg)
	if err != nil {
		b.Fatal(err)
	}
	dcm, err := cgroups.NewManager(h, cgroups.ManagerConfig{CgroupRoot: e.dCgroupRoot})
	if err != nil {
		b.Fatal(err)
	}
	// Capacity, allocatable, QoS settings and sync options exactly as
	// kernelet derives them (podsetup.New), with the node addresses it
	// would find.
	nodeIPs, _ := nodeip.Detect(ctx, nil, e.node, nodeip.DefaultSources())
	setup := podsetup.New(c, podsetup.NodeCapacity(ctx, h), h.Mode, nodeIPs, filepath.Dir(e.dPods))
	if _, err := dcm.EnsureQoS(ctx, setup.QoS, nil); err != nil {
		b.Fatal(err)
	}
	e.dCgroups = kruntime.CgroupsAdapter{Manager: dcm, Config: setup.QoS}
	e.dMgr, err = kruntime.NewManager(kruntime.ManagerConfig{Runtime: rs, Images: is, Cgroups: e.dCgroups,
		PodLogsDir: e.dLogs, PodsDir: e.dPods})
	if err != nil {
		b.Fatal(err)
	}
	e.dSync = setup.Sync
	e.dSync.Sandbox.PodLogsDir = e.dLogs // runtime.Manager.SyncPod sets it from its PodLogsDir
	return e
}

// kerneletBinary is $KERNELET_BIN/kernelet (make build puts it there) or a
// fresh build.
func kerneletBinary(b *testing.B) string {
	b.Helper()
	if dir := os.Getenv("KERNELET_BIN"); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "kernelet")); err == nil {
			return filepath.Join(dir, "kernelet")
		}
	}
	out := filepath.Join(b.TempDir(), "kernelet")
	cmd := exec.Command("go", "build", "-tags", "grpcnotrace", "-o", out, "./cmd/kernelet") // as the Makefile builds it
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if o, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build kernelet: %v\n%s", err, o)
	}
	return out
}

func freePort(b *testing.B) int {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// podStartManifest is a one-container host-network pod running testbox
// sleep.
func podStartManifest(name string) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    args: ["sleep"]
    resources:
      requests: {cpu: 10m, memory: 16Mi}
`, name, images.TestboxImage)
}

// newPods makes n pods named bench-<tag>-NN.
func (e *podStartEnv) newPods(tag string, n int) []*podStart {
	out := make([]*podStart, n)
	for i := range out {
		name := fmt.Sprintf("bench-%s-%02d", tag, i)
		out[i] = &podStart{name: name + "-" + e.node, file: name + ".yaml", manifest: podStartManifest(name)}
	}
	return out
}

// appear writes the manifest into staging and renames it into dir; wrote
// is taken just before the rename.
func (e *podStartEnv) appear(s *podStart, dir string) error {
	staged := filepath.Join(e.staging, s.file)
	if err := os.WriteFile(staged, s.manifest, 0o644); err != nil {
		return err
	}
	s.wrote = time.Now()
	return os.Rename(staged, filepath.Join(dir, s.file))
}

// measure runs act for every pod — one at a time, or all at once for a
// burst — and waits until each pod's container runs. act makes the pod
// appear and, in the direct mode, makes the CRI calls.
func (e *podStartEnv) measure(b *testing.B, pods []*podStart, burst bool, act func(context.Context, *podStart) error) (use cpuUse) {
	b.Helper()
	kpid := 0
	if e.kernelet != nil {
		kpid = e.kernelet.cmd.Process.Pid
	}
	c0, k0 := procCPU(e.ctrdPid), procCPU(kpid)
	defer func() {
		use.containerd, use.kernelet = procCPU(e.ctrdPid)-c0, procCPU(kpid)-k0
	}()
	batches := [][]*podStart{pods}
	if !burst {
		batches = nil
		for _, p := range pods {
			batches = append(batches, []*podStart{p})
		}
	}
	for _, batch := range batches {
		ctx, cancel := context.WithCancelCause(b.Context())
		ctx, cancelT := context.WithTimeout(ctx, podStartTimeout)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, p := range batch {
			wg.Go(func() {
				<-start
				if err := act(ctx, p); err != nil {
					cancel(fmt.Errorf("%s: %w", p.name, err))
				}
			})
		}
		close(start)
		err := e.waitStarted(ctx, batch)
		wg.Wait()
		if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
			err = c
		}
		cancelT()
		cancel(nil)
		if err != nil {
			msg := ""
			if e.kernelet != nil {
				msg = "\nkernelet log (tail):\n" + e.kernelet.logTail()
			}
			b.Fatalf("pods did not start: %v%s", err, msg)
		}
	}
	return use
}

// cpuUse is the CPU time containerd (without its shims) and kernelet
// spent during a measurement.
type cpuUse struct{ containerd, kernelet time.Duration }

// procCPU is the user+system CPU time of process pid so far (0 for none).
func procCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	return parseProcCPU(b)
}

// parseProcCPU is the user+system CPU time in a /proc/<pid>/stat's
// content (0 when it is not one).
func parseProcCPU(b []byte) time.Duration {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// waitStarted polls the runtime until the container of every pod runs and
// records containerd's times for it.
func (e *podStartEnv) waitStarted(ctx context.Context, pods []*podStart) error {
	byName := map[string]*podStart{}
	for _, p := range pods {
		byName[p.name] = p
	}
	pending := len(pods)
	running := &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}
	for pending > 0 {
		cs, err := e.rs.ListContainers(ctx, running)
		if err != nil {
			return fmt.Errorf("list containers: %w", err)
		}
		for _, c := range cs {
			p := byName[c.GetLabels()[podconfig.LabelPodName]]
			if p == nil || !p.started.IsZero() {
				continue
			}
			st, err := e.rs.ContainerStatus(ctx, c.Id, false)
			if err != nil {
				return fmt.Errorf("container status: %w", err)
			}
			p.started = time.Unix(0, st.GetStatus().GetStartedAt())
			p.created = time.Unix(0, st.GetStatus().GetCreatedAt())
			p.sandboxID = c.PodSandboxId
			pending--
		}
		if pending == 0 {
			break
		}
		select {
		case <-ctx.Done():
			var missing []string
			for _, p := range pods {
				if p.started.IsZero() {
					missing = append(missing, p.name)
				}
			}
			return fmt.Errorf("%w: not running: %v", context.Cause(ctx), missing)
		case <-time.After(podStartPoll):
		}
	}
	sbs, err := e.rs.ListPodSandbox(ctx, nil)
	if err != nil {
		return fmt.Errorf("list sandboxes: %w", err)
	}
	for _, sb := range sbs {
		for _, p := range pods {
			if p.sandboxID == sb.Id {
				p.sandboxCreated = time.Unix(0, sb.CreatedAt)
			}
		}
	}
	return nil
}

// runKernelet starts an agent, runs one unmeasured pod, then the measured
// ones, removes their manifests, waits until the agent removed the pods,
// and stops it (the direct mode must not run beside it: it kills every pod
// of the runtime no source wants).
func (e *podStartEnv) runKernelet(b *testing.B, tag string, n int, burst bool) ([]*podStart, cpuUse) {
	b.Helper()
	e.startKernelet(b)
	act := func(_ context.Context, p *podStart) error { return e.appear(p, e.kManifests) }
	e.measure(b, e.newPods(tag+"w", 1), false, act) // warm-up
	e.removeKernelet(b)
	pods := e.newPods(tag, n)
	rctx, rcancel := context.WithCancel(b.Context())
	var rwg sync.WaitGroup
	if !burst {
		// Polling GET /pods costs the agent CPU the direct mode does not
		// pay; in a burst that CPU competes with containerd's on this
		// small machine, so "reported" is measured for sequential starts
		// only.
		rwg.Go(func() { e.watchReported(rctx, pods) })
	}
	use := e.measure(b, pods, burst, act)
	select { // reported a little after the container started
	case <-waitGroupDone(&rwg):
	case <-time.After(5 * time.Second):
	}
	rcancel()
	rwg.Wait()
	e.removeKernelet(b)
	if err := e.kernelet.stop(syscall.SIGTERM); err != nil {
		b.Fatal(err)
	}
	e.kernelet = nil
	return pods, use
}

func waitGroupDone(wg *sync.WaitGroup) <-chan struct{} {
	c := make(chan struct{})
	go func() { wg.Wait(); close(c) }()
	return c
}

// runDirect makes the CRI calls kernelet makes for each pod itself, with
// the same concurrency, after one unmeasured pod; then removes the pods.
func (e *podStartEnv) runDirect(b *testing.B, tag string, n int, burst bool) ([]*podStart, cpuUse) {
	b.Helper()
	e.measure(b, e.newPods(tag+"w", 1), false, e.direct) // warm-up
	e.removeDirect(b)
	pods := e.newPods(tag, n)
	use := e.measure(b, pods, burst, e.direct)
	e.removeDirect(b)
	return pods, use
}

// direct is kernelet's path for a new static pod without kernelet: read
// and decode the manifest as the file source does, GetPodStatus's lists,
// the pod cgroup, RunPodSandbox, PodSandboxStatus, ImageStatus (pull
// policy IfNotPresent), the termination-message file and log dirs,
// CreateContainer, StartContainer — the calls and options of
// runtime.Manager.SyncPod.
func (e *podStartEnv) direct(ctx context.Context, p *podStart) error {
	if err := e.appear(p, e.dManifests); err != nil {
		return err
	}
	path := filepath.Join(e.dManifests, p.file)
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	ms := sources.Decode(data)
	if len(ms) != 1 || ms[0].Err != nil {
		return fmt.Errorf("decode manifest: %v", ms)
	}
	pod, err := sources.StaticPod(ms[0].Pod, sources.SourceFile, path, e.node, time.Now())
	if err != nil {
		return err
	}
	sel := map[string]string{podconfig.LabelPodUID: string(pod.UID)}
	if _, err := e.rs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel}); err != nil {
		return err
	}
	if _, err := e.rs.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel}); err != nil {
		return err
	}
	parent, err := e.dCgroups.EnsurePod(ctx, pod)
	if err != nil {
		return err
	}
	sbOpts := e.dSync.Sandbox
	sbOpts.CgroupParent = parent
	sbCfg, err := podconfig.SandboxConfig(pod, sbOpts)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(sbCfg.LogDirectory, 0o755); err != nil {
		return err
	}
	sandboxID, err := e.rs.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		return err
	}
	if _, err := e.rs.PodSandboxStatus(ctx, sandboxID, false); err != nil {
		return err
	}
	c := &pod.Spec.Containers[0]
	img, err := e.is.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: c.Image, Annotations: map[string]string{}}, false)
	if err != nil {
		return err
	}
	if img.GetImage() == nil {
		return fmt.Errorf("image %s not present", c.Image)
	}
	opts := e.dSync.Container
	opts.ImageRef, opts.ImageUsername = img.GetImage().GetId(), img.GetImage().GetUsername()
	if u := img.GetImage().GetUid(); u != nil {
		v := u.GetValue()
		opts.ImageUID = &v
	}
	opts.PodIPs = opts.HostIPs // host network
	termDir := filepath.Join(e.dPods, string(pod.UID), "containers", c.Name)
	if err := os.MkdirAll(termDir, 0o755); err != nil {
		return err
	}
	opts.TerminationMessageHostPath = filepath.Join(termDir, "0")
	if err := os.WriteFile(opts.TerminationMessageHostPath, nil, 0o666); err != nil {
		return err
	}
	cfg, err := podconfig.ContainerConfig(pod, c, opts)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(sbCfg.LogDirectory, c.Name), 0o755); err != nil {
		return err
	}
	id, err := e.rs.CreateContainer(ctx, sandboxID, cfg, sbCfg)
	if err != nil {
		return err
	}
	return e.rs.StartContainer(ctx, id)
}

// watchReported polls the agent's GET /pods until it reports every pod
// Running with its containers ready, recording when it first did. Every
// 50 ms: at 20 ms the polls alone doubled kernelet's CPU time during a
// measurement (~300 → ~700 ms), which slows the kernelet mode.
func (e *podStartEnv) watchReported(ctx context.Context, pods []*podStart) {
	byName := map[string]*podStart{}
	for _, p := range pods {
		byName[p.name] = p
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	url := "http://127.0.0.1:" + strconv.Itoa(e.port) + "/pods"
	for pending := len(pods); pending > 0; {
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return
		}
		resp, err := hc.Do(req)
		if err != nil {
			continue
		}
		var l v1.PodList
		err = json.NewDecoder(resp.Body).Decode(&l)
		resp.Body.Close()
		if err != nil {
			continue
		}
		now := time.Now()
		for _, pod := range l.Items {
			p := byName[pod.Name]
			if p == nil || !p.reported.IsZero() || pod.Status.Phase != v1.PodRunning {
				continue
			}
			ready := len(pod.Status.ContainerStatuses) > 0
			for _, c := range pod.Status.ContainerStatuses {
				ready = ready && c.Ready
			}
			if ready {
				p.reported = now
				pending--
			}
		}
	}
}

// kerneletProc is a running `kernelet run`.
type kerneletProc struct {
	cmd    *exec.Cmd
	exited chan error
	log    string
}

func (k *kerneletProc) logTail() string {
	b, _ := os.ReadFile(k.log)
	if len(b) > 8<<10 {
		b = b[len(b)-8<<10:]
	}
	return string(b)
}

// stop signals the agent and waits for it to exit (SIGKILL after 30 s).
func (k *kerneletProc) stop(sig syscall.Signal) error {
	_ = k.cmd.Process.Signal(sig)
	select {
	case <-k.exited:
		return nil
	case <-time.After(30 * time.Second):
		_ = k.cmd.Process.Signal(syscall.SIGKILL)
		<-k.exited
		return fmt.Errorf("kernelet did not exit on %v within 30s:\n%s", sig, k.logTail())
	}
}

// startKernelet runs the agent and waits until its pod side runs.
func (e *podStartEnv) startKernelet(b *testing.B) {
	b.Helper()
	log := filepath.Join(filepath.Dir(e.cfg), "kernelet.log")
	if l := os.Getenv("KERNELET_BENCH_LOG"); l != "" { // kept for a diagnostic run
		log = l
	}
	f, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close() // the child has its own copy
	off, _ := f.Seek(0, 2)
	v := os.Getenv("KERNELET_BENCH_V") // a diagnostic run may raise it (e.g. 4)
	if v == "" {
		v = "0"
	}
	cmd := exec.Command(e.bin, "run", "--config", e.cfg, "--container-runtime-endpoint", e.endpoint,
		"--root-dir", e.kRoot, "--hostname-override", e.node, "--pod-manifest-path", e.kManifests, "-v", v)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	k := &kerneletProc{cmd: cmd, exited: make(chan error, 1), log: log}
	go func() { k.exited <- cmd.Wait(); close(k.exited) }()
	e.kernelet = k
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := os.ReadFile(log)
		if int64(len(out)) > off && bytes.Contains(out[off:], []byte(`"Running pods"`)) {
			break
		}
		select {
		case <-k.exited:
			b.Fatalf("kernelet exited:\n%s", k.logTail())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.Fatalf("kernelet pod side not running after 30s:\n%s", k.logTail())
		}
	}
	time.Sleep(200 * time.Millisecond) // the file source's first scan
}

// removeKernelet removes every manifest and waits until the agent removed
// the pods from the runtime and from GET /pods.
func (e *podStartEnv) removeKernelet(b *testing.B) {
	b.Helper()
	entries, err := os.ReadDir(e.kManifests)
	if err != nil {
		b.Fatal(err)
	}
	for _, de := range entries {
		if err := os.Remove(filepath.Join(e.kManifests, de.Name())); err != nil {
			b.Fatal(err)
		}
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	url := "http://127.0.0.1:" + strconv.Itoa(e.port) + "/pods"
	deadline := time.Now().Add(podStartTimeout)
	for {
		sbs, err := e.rs.ListPodSandbox(b.Context(), nil)
		if err != nil {
			b.Fatal(err)
		}
		left := len(sbs)
		if resp, err := hc.Get(url); err == nil {
			var l v1.PodList
			if json.NewDecoder(resp.Body).Decode(&l) == nil {
				left += len(l.Items)
			} else {
				left++
			}
			resp.Body.Close()
		} else {
			left++
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("kernelet did not remove its pods within %v (%d sandboxes):\n%s", podStartTimeout, len(sbs), e.kernelet.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// removeDirect kills and removes every pod of the direct mode (and its
// cgroup, log and pod dirs) with the runtime manager.
func (e *podStartEnv) removeDirect(b *testing.B) {
	b.Helper()
	if err := e.killAll(b.Context(), e.dMgr); err != nil {
		b.Fatal(err)
	}
	entries, _ := os.ReadDir(e.dManifests)
	for _, de := range entries {
		_ = os.Remove(filepath.Join(e.dManifests, de.Name()))
	}
}

// killAll kills every bench pod of the runtime with grace 0 through m.
func (e *podStartEnv) killAll(ctx context.Context, m *kruntime.Manager) error {
	listed, err := m.ListPods(ctx)
	if err != nil {
		return err
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, 8)
	)
	zero := int64(0)
	for _, p := range listed {
		if !strings.HasPrefix(p.Name, "bench-") {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			st, err := m.GetPodStatus(ctx, p.UID, p.Name, p.Namespace)
			if err != nil {
				st = p
			}
			if err := m.KillPod(ctx, nil, st, &zero).Err(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("kill %s: %w", p.Name, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// cleanup stops the agent, kills every bench pod, and removes both cgroup
// roots from every hierarchy.
func (e *podStartEnv) cleanup(b *testing.B) {
	if e.kernelet != nil {
		_ = e.kernelet.stop(syscall.SIGKILL)
		e.kernelet = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, m := range []*kruntime.Manager{e.kMgr, e.dMgr} {
		if m == nil || e.rs == nil {
			continue
		}
		if err := e.killAll(ctx, m); err != nil {
			b.Errorf("cleanup: %v", err)
		}
	}
	for _, root := range []string{e.kCgroupRoot, e.dCgroupRoot} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := cgroupfs.RemovePod(root)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				b.Errorf("cleanup: remove cgroup root %s: %v", root, err)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if dirs := cgroupfs.PodDirs(root); len(dirs) > 0 {
			b.Errorf("cleanup: cgroup dirs left: %v", dirs)
		}
	}
}

// percentile is the nearest-rank p-quantile (0 < p ≤ 1) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// spans are one duration per pod.
func spans(pods []*podStart, f func(*podStart) time.Duration) []time.Duration {
	out := make([]time.Duration, 0, len(pods))
	for _, p := range pods {
		out = append(out, f(p))
	}
	return out
}

func reportPodStart(b *testing.B, label string, k, d []*podStart, kcpu, dcpu cpuUse) {
	b.Helper()
	kl, dl := spans(k, (*podStart).latency), spans(d, (*podStart).latency)
	k50, k99, d50, d99 := percentile(kl, .5), percentile(kl, .99), percentile(dl, .5), percentile(dl, .99)
	r50, r99 := ms(k50)/ms(d50), ms(k99)/ms(d99)
	b.ReportMetric(ms(k50), "kernelet-p50-ms")
	b.ReportMetric(ms(k99), "kernelet-p99-ms")
	b.ReportMetric(ms(d50), "direct-p50-ms")
	b.ReportMetric(ms(d99), "direct-p99-ms")
	b.ReportMetric(r50, "ratio-p50")
	b.ReportMetric(r99, "ratio-p99")
	var rep []time.Duration
	for _, p := range k {
		if !p.reported.IsZero() {
			rep = append(rep, p.reported.Sub(p.wrote))
		}
	}
	reported := "reported: none"
	if len(rep) > 0 {
		b.ReportMetric(ms(percentile(rep, .5)), "reported-p50-ms")
		reported = fmt.Sprintf("kernelet GET /pods Running (%d/%d pods) p50 %.0f ms p99 %.0f ms",
			len(rep), len(k), ms(percentile(rep, .5)), ms(percentile(rep, .99)))
	}
	// Where the time goes, from containerd's own timestamps: manifest →
	// RunPodSandbox received; → CreateContainer done; → started.
	phase := func(pods []*podStart) string {
		front := spans(pods, func(p *podStart) time.Duration { return p.sandboxCreated.Sub(p.wrote) })
		create := spans(pods, func(p *podStart) time.Duration { return p.created.Sub(p.sandboxCreated) })
		start := spans(pods, func(p *podStart) time.Duration { return p.started.Sub(p.created) })
		return fmt.Sprintf("appear→RunPodSandbox p50 %.0f p99 %.0f, →created p50 %.0f p99 %.0f, →started p50 %.0f p99 %.0f ms",
			ms(percentile(front, .5)), ms(percentile(front, .99)), ms(percentile(create, .5)), ms(percentile(create, .99)),
			ms(percentile(start, .5)), ms(percentile(start, .99)))
	}
	b.Logf("pod start (%s): kernelet p50 %.0f ms p99 %.0f ms; direct p50 %.0f ms p99 %.0f ms; ratio p50 %.2f× p99 %.2f×\n"+
		"  %s\n  kernelet: %s\n  direct:   %s\n"+
		"  CPU during the measurement: kernelet mode containerd %v + kernelet %v; direct mode containerd %v",
		label, ms(k50), ms(k99), ms(d50), ms(d99), r50, r99, reported, phase(k), phase(d),
		kcpu.containerd, kcpu.kernelet, dcpu.containerd)
}
