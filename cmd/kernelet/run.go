package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent"
	"github.com/kernelet/kernelet/agent/certificates"
	"github.com/kernelet/kernelet/agent/config"
	"github.com/kernelet/kernelet/agent/kubeclient"
	"github.com/kernelet/kernelet/agent/nodeip"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/status/node"
)

// DefaultRootDir is where `kernelet run` keeps its state unless
// --root-dir says otherwise; in kubelet's place (`kernelet kubelet`, or
// the binary named kubelet) the default is kubelet's, KubeletRootDir.
const (
	DefaultRootDir = "/var/lib/kernelet"
	KubeletRootDir = "/var/lib/kubelet"
)

// kubeletCommand is `kernelet kubelet`: kernelet in kubelet's place, with
// kubelet's command line and defaults (--root-dir /var/lib/kubelet).
func kubeletCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runAgent(ctx, "kubelet", KubeletRootDir, args, stdout, stderr)
}

func runCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runAgent(ctx, "kernelet run", DefaultRootDir, args, stdout, stderr)
}

func runAgent(ctx context.Context, name, rootDir string, args []string, stdout, stderr io.Writer) int {
	f, code, done := parseRun(name, rootDir, args, stdout, stderr)
	if done {
		return code
	}
	_, gcTuner := setDefaultGOGC()
	cfg, problems := loadForRun(f, hostFacts())
	if cfg != nil {
		for _, w := range cfg.Warnings {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
	}
	if len(problems) > 0 {
		fmt.Fprintf(stderr, "%s: refusing to start, %d problem(s):\n", name, len(problems))
		for _, p := range problems {
			fmt.Fprintf(stderr, "  %s\n", p)
		}
		return 1
	}

	kc := &cfg.Kubelet
	if err := applyLogging(kc); err != nil {
		fmt.Fprintf(stderr, "%s: logging: %v\n", name, err)
		return 1
	}
	logger := klog.Background().WithName("kernelet")
	ctx = klog.NewContext(ctx, logger)

	nodeName, err := nodeName(f.hostnameOverride)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	nodeIPs, _ := nodeip.Parse(f.nodeIP)                         // checked by loadForRun
	nodeLabels, _ := node.ParseNodeLabels(f.nodeLabels.String()) // checked by loadForRun
	if err := certificates.Bootstrap(ctx, f.certOptions(nodeName)); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	opts := agent.Options{Config: cfg, NodeName: nodeName, RootDir: f.rootDir, Kubeconfig: f.kubeconfig, CertDir: f.certDir,
		NodeIPs: nodeIPs, NodeLabels: nodeLabels, BPFOff: f.bpf == "off" || f.bpf == "false"}
	f.gc.apply(&opts)
	a, err := agent.New(opts, agent.Deps{GCTuner: gcTuner})
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
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
	if kc.RunOnce {
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
	if _, err := node.ParseNodeLabels(f.nodeLabels.String()); err != nil {
		problems = append(problems, (&field.Error{Type: field.ErrorTypeInvalid, Field: "--node-labels", BadValue: f.nodeLabels.String(), Detail: err.Error()}).Error())
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
	problems = append(problems, f.runOnce.problems(cfg != nil && cfg.Kubelet.RunOnce, f.kubeconfig)...)
	if f.kubelet != nil {
		problems = append(problems, f.kubelet.Refusals()...)
	}
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

// cgroupV1 tells whether the host has cgroup v1 hierarchies (legacy or
// hybrid): kubelet's check for failCgroupV1 (not the pure v2 layout).
func cgroupV1() bool {
	h, err := cgroups.Discover()
	return err == nil && h.Mode != cgroups.Unified
}
