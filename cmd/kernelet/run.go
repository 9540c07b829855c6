package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kernelet/kernelet/agent"
	"github.com/kernelet/kernelet/agent/certificates"
	"github.com/kernelet/kernelet/agent/config"
	"github.com/kernelet/kernelet/agent/kubeclient"
	"github.com/kernelet/kernelet/agent/nodeip"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
	"github.com/kernelet/kernelet/status/node"
)

// DefaultRootDir is where kernelet keeps its state unless --root-dir says otherwise.
const DefaultRootDir = "/var/lib/kernelet"

// runFlags are `kernelet run`'s flags, named as kubelet names them.
type runFlags struct {
	config, kubeconfig, hostnameOverride, rootDir, nodeIP string
	nodeLabels                                            string
	// TLS bootstrap (agent/certificates).
	bootstrapKubeconfig, certDir                  string
	rotateCerts, rotateServerCerts                bool
	runtimeEndpoint, podManifestPath, manifestURL string
	port, healthzPort                             int
	// kernelet's own (flags of the KerneletConfiguration): the eviction
	// manager's fallback decision period between kernel notifications,
	// its mode, dry run and cooldown, and the file of the document.
	evictionTick, evictionCooldown time.Duration
	evictionMode, kerneletConfig   string
	evictionDryRun                 bool
	// bpf: "auto" uses eBPF where it works, "off" forces the fallbacks.
	bpf     string
	set     map[string]bool
	gc      gcFlags
	runOnce runOnceFlags
}

var (
	klogOnce  sync.Once
	klogFlags = flag.NewFlagSet("klog", flag.ContinueOnError)
)

func (f *runFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.config, "config", "", "KubeletConfiguration file (kubelet.config.k8s.io/v1beta1); flags win over it")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the API server; empty runs standalone")
	fs.StringVar(&f.hostnameOverride, "hostname-override", "", "node name to use instead of the hostname")
	fs.StringVar(&f.nodeIP, "node-ip", "", "the node's address, or an IPv4 and an IPv6 one comma-separated; empty: the hostname's address, else the default route's")
	fs.StringVar(&f.rootDir, "root-dir", DefaultRootDir, "directory for kernelet's state")
	fs.StringVar(&f.nodeLabels, "node-labels", "", "labels to add when registering the node, key=value comma-separated")
	fs.StringVar(&f.runtimeEndpoint, "container-runtime-endpoint", "", "CRI endpoint, e.g. unix:///run/containerd/containerd.sock (containerRuntimeEndpoint)")
	fs.StringVar(&f.podManifestPath, "pod-manifest-path", "", "directory of static pod manifests (staticPodPath)")
	fs.StringVar(&f.manifestURL, "manifest-url", "", "URL serving static pod manifests (staticPodURL)")
	fs.IntVar(&f.port, "port", 0, "port of the agent API (port)")
	fs.IntVar(&f.healthzPort, "healthz-port", 0, "port of /healthz, 0 keeps the configured one (healthzPort)")
	fs.StringVar(&f.bootstrapKubeconfig, "bootstrap-kubeconfig", "", "kubeconfig whose credentials request the client certificate when --kubeconfig is missing or its certificate expired; --kubeconfig is then written")
	fs.StringVar(&f.certDir, "cert-dir", "", "directory of the client and serving certificates (default <root-dir>/pki)")
	fs.BoolVar(&f.rotateCerts, "rotate-certificates", false, "renew the client certificate before it expires (rotateCertificates)")
	fs.BoolVar(&f.rotateServerCerts, "rotate-server-certificates", false, "request and renew the serving certificate from the API server (serverTLSBootstrap)")
	fs.StringVar(&f.kerneletConfig, "kernelet-config", "", "kernelet's own settings: a KerneletConfiguration file (kernelet.io/v1alpha1), unless --config has it as its second document")
	fs.DurationVar(&f.evictionTick, "eviction-tick", eviction.DefaultTick, "kernelet's own (evictionTick): how often the eviction manager decides between kernel notifications (memcg thresholds, OOM, PSI); 10s in kubelet mode")
	fs.StringVar(&f.evictionMode, "eviction-mode", string(eviction.ModeKernelet), "kernelet's own (evictionMode): kernelet (kernel wake-ups, deficit-sized evictions) or kubelet (one pod per 10 s decision, for comparison)")
	fs.BoolVar(&f.evictionDryRun, "eviction-dry-run", false, "kernelet's own (evictionDryRun): log, export and show in `kernelet status` the pods eviction would evict; never kill")
	fs.DurationVar(&f.evictionCooldown, "eviction-cooldown", eviction.DefaultCooldown, "kernelet's own (evictionCooldown): how long evicted pods at most count as freeing their memory")
	fs.StringVar(&f.bpf, "bpf", "auto", "kernelet's own: auto (eBPF where it works, else the named fallbacks) or off (force the fallbacks: memory.events, oom_control, kmsg for OOM kills; a walk of the cgroup hierarchy for cgroup ids)")
	f.gc.register(fs)
	f.runOnce.register(fs)
	klogOnce.Do(func() { klog.InitFlags(klogFlags) })
	for _, name := range []string{"v", "vmodule"} {
		kf := klogFlags.Lookup(name)
		fs.Var(kf.Value, name, kf.Usage)
	}
}

// overrides turns the flags that were set into config overrides.
func (f *runFlags) overrides() []config.Override {
	var out []config.Override
	if f.set["container-runtime-endpoint"] {
		out = append(out, func(kc *kubeletv1beta1.KubeletConfiguration) { kc.ContainerRuntimeEndpoint = f.runtimeEndpoint })
	}
	if f.set["pod-manifest-path"] {
		out = append(out, func(kc *kubeletv1beta1.KubeletConfiguration) { kc.StaticPodPath = f.podManifestPath })
	}
	if f.set["manifest-url"] {
		out = append(out, func(kc *kubeletv1beta1.KubeletConfiguration) { kc.StaticPodURL = f.manifestURL })
	}
	if f.set["rotate-certificates"] {
		out = append(out, func(kc *kubeletv1beta1.KubeletConfiguration) { kc.RotateCertificates = f.rotateCerts })
	}
	if f.set["rotate-server-certificates"] {
		out = append(out, func(kc *kubeletv1beta1.KubeletConfiguration) { kc.ServerTLSBootstrap = f.rotateServerCerts })
	}
	if f.set["port"] {
		out = append(out, func(kc *kubeletv1beta1.KubeletConfiguration) { kc.Port = int32(f.port) })
	}
	if f.set["healthz-port"] {
		out = append(out, func(kc *kubeletv1beta1.KubeletConfiguration) { p := int32(f.healthzPort); kc.HealthzPort = &p })
	}
	return out
}

// kerneletOverrides turns the flags of kernelet's own settings that were
// set into overrides of the KerneletConfiguration.
func (f *runFlags) kerneletOverrides() []config.KerneletOverride {
	var out []config.KerneletOverride
	if f.set["eviction-tick"] {
		out = append(out, func(k *config.KerneletConfiguration) { k.EvictionTick.Duration = f.evictionTick })
	}
	if f.set["eviction-mode"] {
		out = append(out, func(k *config.KerneletConfiguration) { k.EvictionMode = f.evictionMode })
	}
	if f.set["eviction-dry-run"] {
		out = append(out, func(k *config.KerneletConfiguration) { k.EvictionDryRun = f.evictionDryRun })
	}
	if f.set["eviction-cooldown"] {
		out = append(out, func(k *config.KerneletConfiguration) { k.EvictionCooldown.Duration = f.evictionCooldown })
	}
	return out
}

func runCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f runFlags
	f.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: kernelet run [flags]")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	setDefaultGOGC()
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "kernelet run: unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		return 2
	}
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })

	cfg, problems := loadForRun(&f, hostFacts())
	if cfg != nil {
		for _, w := range cfg.Warnings {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
	}
	if len(problems) > 0 {
		fmt.Fprintf(stderr, "kernelet run: refusing to start, %d problem(s):\n", len(problems))
		for _, p := range problems {
			fmt.Fprintf(stderr, "  %s\n", p)
		}
		return 1
	}

	kc := &cfg.Kubelet
	if err := applyLogging(&kc.Logging, f.set); err != nil {
		fmt.Fprintf(stderr, "kernelet run: logging: %v\n", err)
		return 1
	}
	logger := klog.Background().WithName("kernelet")
	ctx = klog.NewContext(ctx, logger)

	nodeName, err := nodeName(f.hostnameOverride)
	if err != nil {
		fmt.Fprintf(stderr, "kernelet run: %v\n", err)
		return 1
	}
	nodeIPs, _ := nodeip.Parse(f.nodeIP)                // checked by loadForRun
	nodeLabels, _ := node.ParseNodeLabels(f.nodeLabels) // checked by loadForRun
	if err := certificates.Bootstrap(ctx, f.certOptions(nodeName)); err != nil {
		fmt.Fprintf(stderr, "kernelet run: %v\n", err)
		return 1
	}
	opts := agent.Options{Config: cfg, NodeName: nodeName, RootDir: f.rootDir, Kubeconfig: f.kubeconfig, CertDir: f.certDir,
		NodeIPs: nodeIPs, NodeLabels: nodeLabels, BPFOff: f.bpf == "off" || f.bpf == "false"}
	f.gc.apply(&opts)
	a, err := agent.New(opts, agent.Deps{})
	if err != nil {
		fmt.Fprintf(stderr, "kernelet run: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logger.Info("Starting kernelet", "version", agent.Version, "revision", agent.Revision(), "node", nodeName,
		"config", cfg.File, "kerneletConfig", cfg.KerneletFrom, "evictionMode", cfg.Kernelet.EvictionMode,
		"evictionDryRun", cfg.Kernelet.EvictionDryRun, "runtimeEndpoint", kc.ContainerRuntimeEndpoint, "rootDir", f.rootDir)
	go func() {
		<-ctx.Done()
		logger.Info("Shutting down on signal")
	}()
	if f.runOnce.enabled {
		return runOnce(ctx, a, f.runOnce.timeout, stdout, stderr)
	}
	if err := a.Run(ctx); err != nil {
		logger.Error(err, "Agent failed")
		return 1
	}
	return 0
}

// loadForRun loads and validates the configuration with the flags applied,
// then checks it against the host; it returns every problem found.
func loadForRun(f *runFlags, host config.Host) (*config.Config, []string) {
	var (
		cfg *config.Config
		err error
	)
	o := config.Options{Overrides: f.overrides(), KerneletOverrides: f.kerneletOverrides(), KerneletFile: f.kerneletConfig}
	if f.config != "" {
		cfg, err = config.LoadWith(f.config, o)
	} else {
		var kdata []byte
		if f.kerneletConfig != "" {
			if kdata, err = os.ReadFile(f.kerneletConfig); err != nil {
				return nil, []string{fmt.Sprintf("read kernelet config: %v", err)}
			}
		}
		cfg, err = config.FromDefaultsWith(o, kdata)
	}
	var problems []string
	var ce *config.Error
	switch {
	case errors.As(err, &ce):
		problems = append(problems, strings.Split(strings.SplitN(err.Error(), "\n", 2)[1], "\n")...)
		for i := range problems {
			problems[i] = strings.TrimSpace(problems[i])
		}
		if cfg.Kubelet.Kind == "" { // the file could not be decoded: no host checks
			return cfg, problems
		}
	case err != nil:
		return nil, []string{err.Error()}
	}
	source := f.config
	if source == "" {
		source = "flags"
	}
	for _, fe := range config.CheckHost(cfg, host) {
		problems = append(problems, fmt.Sprintf("%s: %s", source, fe.Error()))
	}
	co := f.certOptions("")
	co.CertDir = f.certDir // a relative --root-dir is its own problem
	for _, fe := range certificates.Problems(co, &cfg.Kubelet) {
		problems = append(problems, fe.Error())
	}
	if f.kubeconfig != "" && f.bootstrapKubeconfig == "" && !host.FileExists(f.kubeconfig) {
		problems = append(problems, (&field.Error{Type: field.ErrorTypeInvalid, Field: "--kubeconfig", BadValue: f.kubeconfig, Detail: "file does not exist"}).Error())
	}
	if ips, err := nodeip.Parse(f.nodeIP); err != nil {
		problems = append(problems, (&field.Error{Type: field.ErrorTypeInvalid, Field: "--node-ip", BadValue: f.nodeIP, Detail: err.Error()}).Error())
	} else if len(ips) > 0 && host.LocalIPs != nil {
		if local, err := host.LocalIPs(); err == nil {
			for _, ip := range nodeip.NotLocal(ips, local) {
				problems = append(problems, (&field.Error{Type: field.ErrorTypeInvalid, Field: "--node-ip", BadValue: f.nodeIP,
					Detail: ip.String() + " is not an address of this host's interfaces"}).Error())
			}
		}
	}
	if _, err := node.ParseNodeLabels(f.nodeLabels); err != nil {
		problems = append(problems, (&field.Error{Type: field.ErrorTypeInvalid, Field: "--node-labels", BadValue: f.nodeLabels, Detail: err.Error()}).Error())
	}
	if f.kubeconfig != "" && f.bootstrapKubeconfig == "" && host.FileExists(f.kubeconfig) {
		if _, err := kubeclient.Load(f.kubeconfig); err != nil {
			problems = append(problems, (&field.Error{Type: field.ErrorTypeInvalid, Field: "--kubeconfig", BadValue: f.kubeconfig, Detail: err.Error()}).Error())
		}
	}
	switch f.bpf {
	case "auto", "off", "false", "true", "on":
	default:
		problems = append(problems, (&field.Error{Type: field.ErrorTypeNotSupported, Field: "--bpf", BadValue: f.bpf, Detail: `supported values: "auto", "off"`}).Error())
	}
	problems = append(problems, f.gc.problems()...)
	problems = append(problems, f.runOnce.problems(f.kubeconfig)...)
	if !filepath.IsAbs(f.rootDir) {
		problems = append(problems, (&field.Error{Type: field.ErrorTypeInvalid, Field: "--root-dir", BadValue: f.rootDir, Detail: "must be an absolute path"}).Error())
	}
	return cfg, problems
}

// hostFacts reads what config.CheckHost needs from this machine.
func hostFacts() config.Host {
	comm, _ := os.ReadFile("/proc/1/comm")
	memV2, swapAcct := memoryCgroupFacts()
	return config.Host{
		PID1: strings.TrimSpace(string(comm)),
		FileExists: func(p string) bool {
			st, err := os.Stat(p)
			return err == nil && st.Mode().IsRegular()
		},
		LocalIPs: nodeip.LocalIPs,
		ProcSwaps: func() ([]byte, error) {
			b, err := os.ReadFile("/proc/swaps")
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil // no swap support
			}
			return b, err
		},
		MemoryCgroupV2: memV2,
		SwapAccounting: swapAcct,
		CgroupV1:       cgroupV1(),
		Sysctl: func(name string) (int, error) {
			b, err := os.ReadFile(filepath.Join("/proc/sys", name))
			if err != nil {
				return 0, err
			}
			return strconv.Atoi(strings.TrimSpace(string(b)))
		},
	}
}

// memoryCgroupFacts tells whether the memory controller is on cgroup v2
// and whether it accounts swap (v1: memory.memsw.limit_in_bytes at the
// hierarchy's root; v2: memory.swap.max in this process's cgroup, as
// kubelet checks).
func memoryCgroupFacts() (v2, swapAccounting bool) {
	h, err := cgroups.Discover()
	if err != nil {
		return false, false
	}
	if m := h.V1["memory"]; m != nil {
		_, err := os.Stat(filepath.Join(m.Path, "memory.memsw.limit_in_bytes"))
		return false, err == nil
	}
	if h.Unified == nil {
		return false, false
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return true, false
	}
	for _, line := range strings.Split(strings.TrimSpace(string(self)), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			_, err := os.Stat(filepath.Join(h.Unified.Path, rest, "memory.swap.max"))
			return true, err == nil
		}
	}
	return true, false
}

// certOptions are the TLS bootstrap's flags.
func (f *runFlags) certOptions(nodeName string) certificates.Options {
	return certificates.Options{Kubeconfig: f.kubeconfig, BootstrapKubeconfig: f.bootstrapKubeconfig,
		CertDir: cmp.Or(f.certDir, certificates.DefaultCertDir(f.rootDir)), NodeName: nodeName}
}

func nodeName(override string) (string, error) {
	name := override
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("node name: %w", err)
		}
		name = h
	}
	return strings.ToLower(strings.TrimSpace(name)), nil
}

// applyLogging applies the logging settings of the configuration that
// kernelet honours (the others are refused by validation): verbosity and
// vmodule unless the -v and -vmodule flags were given (the flags win, as
// with kubelet), and the flush frequency.
func applyLogging(l *logsapi.LoggingConfiguration, set map[string]bool) error {
	if !set["v"] && l.Verbosity != 0 {
		if err := klogFlags.Lookup("v").Value.Set(fmt.Sprint(uint32(l.Verbosity))); err != nil {
			return fmt.Errorf("verbosity: %w", err)
		}
	}
	if !set["vmodule"] && len(l.VModule) > 0 {
		if err := klogFlags.Lookup("vmodule").Value.Set(logsapi.VModuleConfigurationPflag(&l.VModule).String()); err != nil {
			return fmt.Errorf("vmodule: %w", err)
		}
	}
	if d := l.FlushFrequency.Duration.Duration; d > 0 {
		klog.StartFlushDaemon(d)
	}
	return nil
}

// cgroupV1 tells whether the host has cgroup v1 hierarchies (legacy or
// hybrid): kubelet's check for failCgroupV1 (not the pure v2 layout).
func cgroupV1() bool {
	h, err := cgroups.Discover()
	return err == nil && h.Mode != cgroups.Unified
}
