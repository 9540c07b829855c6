package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation/field"
	cliflag "k8s.io/component-base/cli/flag"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kernelet/kernelet/agent/config"
	"github.com/kernelet/kernelet/agent/config/kubeletflags"
	"github.com/kernelet/kernelet/agent/kubeclient"
	"github.com/kernelet/kernelet/eviction"
)

// runFlags are `kernelet run`'s flags: kubelet's command line (the flags
// kernelet acts on here, the others bound by kubeletflags) and kernelet's
// own.
type runFlags struct {
	config, kubeconfig, hostnameOverride, rootDir, nodeIP string
	bootstrapKubeconfig, certDir                          string
	nodeLabels                                            listValue
	seccompDefault                                        bool
	// kernelet's own (flags of the KerneletConfiguration): the eviction
	// manager's fallback decision period between kernel notifications,
	// its mode, dry run and cooldown, and the file of the document.
	evictionTick, evictionCooldown time.Duration
	evictionMode, kerneletConfig   string
	evictionDryRun                 bool
	// bpf: "auto" uses eBPF where it works, "off" forces the fallbacks.
	bpf     string
	gc      gcFlags
	runOnce runOnceFlags
	help    bool
	version string
	// kubelet is the rest of kubelet's command line.
	kubelet *kubeletflags.Bound
	set     map[string]bool
}

// register defines the flags on fs; rootDir is --root-dir's default.
func (f *runFlags) register(fs *pflag.FlagSet, rootDir string) error {
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	fs.StringVar(&f.config, "config", "", "KubeletConfiguration file (kubelet.config.k8s.io/v1beta1); flags win over it")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the API server; empty runs standalone")
	fs.StringVar(&f.bootstrapKubeconfig, "bootstrap-kubeconfig", "", "kubeconfig with bootstrap credentials, used when --kubeconfig does not exist (TLS bootstrap)")
	fs.StringVar(&f.certDir, "cert-dir", "", "directory of the bootstrapped client certificate")
	fs.StringVar(&f.hostnameOverride, "hostname-override", "", "node name to use instead of the hostname")
	fs.StringVar(&f.nodeIP, "node-ip", "", "the node's address, or an IPv4 and an IPv6 one comma-separated; empty: the hostname's address, else the default route's")
	fs.StringVar(&f.rootDir, "root-dir", rootDir, "directory for kernelet's state")
	fs.Var(&f.nodeLabels, "node-labels", "labels to add when registering the node, key=value comma-separated (repeatable)")
	fs.BoolVar(&f.seccompDefault, "seccomp-default", false, "RuntimeDefault as the default seccomp profile of every container (sets seccompDefault)")
	fs.StringVar(&f.kerneletConfig, "kernelet-config", "", "kernelet's own settings: a KerneletConfiguration file (kernelet.io/v1alpha1), unless --config has it as its second document")
	fs.DurationVar(&f.evictionTick, "eviction-tick", eviction.DefaultTick, "kernelet's own (evictionTick): how often the eviction manager decides between kernel notifications (memcg thresholds, OOM, PSI); 10s in kubelet mode")
	fs.StringVar(&f.evictionMode, "eviction-mode", string(eviction.ModeKernelet), "kernelet's own (evictionMode): kernelet (kernel wake-ups, deficit-sized evictions) or kubelet (one pod per 10 s decision, for comparison)")
	fs.BoolVar(&f.evictionDryRun, "eviction-dry-run", false, "kernelet's own (evictionDryRun): log, export and show in `kernelet status` the pods eviction would evict; never kill")
	fs.DurationVar(&f.evictionCooldown, "eviction-cooldown", eviction.DefaultCooldown, "kernelet's own (evictionCooldown): how long evicted pods at most count as freeing their memory")
	fs.StringVar(&f.bpf, "bpf", "auto", "kernelet's own: auto (eBPF where it works, else the named fallbacks) or off (force the fallbacks: memory.events, oom_control, kmsg for OOM kills; a walk of the cgroup hierarchy for cgroup ids)")
	f.gc.register(fs)
	f.runOnce.register(fs)
	fs.BoolVarP(&f.help, "help", "h", false, "print the flags and exit")
	fs.StringVar(&f.version, "version", "false", "print the version and exit (--version=raw: as JSON)")
	fs.Lookup("version").NoOptDefVal = "true"
	var err error
	f.kubelet, err = kubeletflags.Bind(fs)
	return err
}

// overrides turns the flags that were set into config overrides: the
// configuration's flags of kubelet's command line, and --seccomp-default
// (kubelet ORs it with the file's seccompDefault).
func (f *runFlags) overrides() []config.Override {
	var out []config.Override
	if f.kubelet != nil {
		out = f.kubelet.Overrides()
	}
	if f.seccompDefault {
		out = append(out, func(kc *kubeletv1beta1.KubeletConfiguration) { t := true; kc.SeccompDefault = &t })
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

// parseRun parses the command line of the agent; done tells that the
// command ends here with code (help, version, usage errors).
func parseRun(name, rootDir string, args []string, stdout, stderr io.Writer) (f *runFlags, code int, done bool) {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	f = &runFlags{}
	if err := f.register(fs, rootDir); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return nil, 1, true
	}
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(stderr, "%s: %v\nsee %s --help\n", name, err, name)
		return nil, 2, true
	}
	switch {
	case f.help:
		fmt.Fprintf(stdout, "usage: %s [flags]\n\nkernelet runs the pods of this node with kubelet's command line and configuration;\n"+
			"kubelet flags it does not act on are refused by name. Flags:\n%s", name, fs.FlagUsages())
		return nil, 0, true
	case f.version != "false":
		return nil, printVersion(stdout, stderr, f.version, name == "kubelet"), true
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "%s: unexpected arguments: %s\n", name, strings.Join(fs.Args(), " "))
		return nil, 2, true
	}
	f.set = map[string]bool{}
	fs.Visit(func(fl *pflag.Flag) { f.set[fl.Name] = true })
	return f, 0, false
}

// listValue is a flag whose uses add comma-separated items (kubelet's
// --node-labels merges repeated uses).
type listValue struct{ items []string }

func (l *listValue) String() string { return strings.Join(l.items, ",") }
func (l *listValue) Type() string   { return "key=value,..." }
func (l *listValue) Set(v string) error {
	if v != "" {
		l.items = append(l.items, v)
	}
	return nil
}

// errNoBootstrap: TLS bootstrap is not in this build (agent/certificates
// brings it).
var errNoBootstrap = errors.New("kernelet does not support TLS bootstrap yet: --kubeconfig must name an existing kubeconfig")

// certProblems checks --bootstrap-kubeconfig and --cert-dir: a bootstrap
// kubeconfig is accepted when --kubeconfig exists (kubelet then does not
// bootstrap either); a bootstrap that would be needed, and --cert-dir, are
// refused by name until TLS bootstrap is wired in.
func (f *runFlags) certProblems(host config.Host) []string {
	var out []string
	if f.bootstrapKubeconfig != "" {
		switch {
		case f.kubeconfig == "":
			out = append(out, field.Invalid(field.NewPath("--bootstrap-kubeconfig"), f.bootstrapKubeconfig, "needs --kubeconfig").Error())
		case !host.FileExists(f.kubeconfig):
			out = append(out, field.Invalid(field.NewPath("--bootstrap-kubeconfig"), f.bootstrapKubeconfig, errNoBootstrap.Error()).Error())
		default:
			if _, err := kubeclient.Load(f.kubeconfig); err != nil {
				out = append(out, field.Invalid(field.NewPath("--bootstrap-kubeconfig"), f.bootstrapKubeconfig, errNoBootstrap.Error()+": "+err.Error()).Error())
			}
		}
	}
	if f.certDir != "" {
		out = append(out, "kernelet does not support --cert-dir yet (the directory of TLS bootstrap's certificates)")
	}
	return out
}
