package main

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kernelet/kernelet/agent/config"
)

func TestCommandLine(t *testing.T) {
	for _, tc := range []struct{ argv, want []string }{
		{[]string{"/usr/bin/kubelet", "--config=/c"}, []string{"kubelet", "--config=/c"}},
		{[]string{"kubelet"}, []string{"kubelet"}},
		{[]string{"/usr/local/bin/kernelet", "run", "--v=2"}, []string{"run", "--v=2"}},
		{[]string{"/usr/bin/kubelet.real"}, []string{}},
	} {
		if got := CommandLine(tc.argv); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("CommandLine(%q) = %q, want %q", tc.argv, got, tc.want)
		}
	}
}

// TestKubeletVersionForKubeadm: kubeadm v1.37.2's preflight runs
// `kubelet --version` and parses it with this expression
// (cmd/kubeadm/app/preflight/utils.go).
func TestKubeletVersionForKubeadm(t *testing.T) {
	kubeadm := regexp.MustCompile(`^\s*Kubernetes v((0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)([-\w.+]*)?)\s*$`)
	code, out, _ := run(t, "kubelet", "--version")
	m := kubeadm.FindStringSubmatch(strings.TrimSpace(out))
	if code != 0 || m == nil {
		t.Fatalf("exit %d, %q does not parse as kubeadm parses it", code, out)
	}
	if _, err := version.ParseSemantic(m[1]); err != nil {
		t.Errorf("%q: %v", m[1], err)
	}
}

// TestKubeadmCommandLineParses: the command line kubeadm v1.37's drop-in
// (10-kubeadm.conf) and kubeadm-flags.env make, with every form pflag
// takes, is parsed into the flags and configuration overrides.
func TestKubeadmCommandLineParses(t *testing.T) {
	args := []string{
		// KUBELET_KUBECONFIG_ARGS, KUBELET_CONFIG_ARGS
		"--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf", "--kubeconfig=/etc/kubernetes/kubelet.conf",
		"--config=/var/lib/kubelet/config.yaml",
		// KUBELET_KUBEADM_ARGS (kubeadm-flags.env) and KUBELET_EXTRA_ARGS
		"--container-runtime-endpoint=unix:///run/containerd/containerd.sock", "--node-ip", "192.0.2.10",
		"--hostname-override=Node-1", "--node-labels=a=b", "--node-labels", "c=d",
		"--register-with-taints=node-role.kubernetes.io/control-plane:NoSchedule", "--v=2",
	}
	f, code, done := parseRun("kubelet", KubeletRootDir, args, io.Discard, io.Discard)
	if done {
		t.Fatalf("ended with %d", code)
	}
	if f.bootstrapKubeconfig != "/etc/kubernetes/bootstrap-kubelet.conf" || f.kubeconfig != "/etc/kubernetes/kubelet.conf" ||
		f.config != "/var/lib/kubelet/config.yaml" || f.nodeIP != "192.0.2.10" || f.hostnameOverride != "Node-1" ||
		f.nodeLabels.String() != "a=b,c=d" || f.rootDir != KubeletRootDir {
		t.Errorf("flags: %+v", f)
	}
	if r := f.kubelet.Refusals(); len(r) != 0 {
		t.Errorf("refusals: %v", r)
	}
	var kc kubeletv1beta1.KubeletConfiguration
	for _, o := range f.overrides() {
		o(&kc)
	}
	if kc.ContainerRuntimeEndpoint != "unix:///run/containerd/containerd.sock" || kc.Logging.Verbosity != 2 ||
		!reflect.DeepEqual(kc.RegisterWithTaints, []v1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: v1.TaintEffectNoSchedule}}) {
		t.Errorf("overrides: endpoint %q verbosity %d taints %v", kc.ContainerRuntimeEndpoint, kc.Logging.Verbosity, kc.RegisterWithTaints)
	}
}

func TestRunCommandLineEnds(t *testing.T) {
	for name, tc := range map[string]struct {
		args      []string
		code      int
		out, errs string
	}{
		"help":                 {args: []string{"kubelet", "--help"}, out: "usage: kubelet [flags]"},
		"h":                    {args: []string{"run", "-h"}, out: "usage: kernelet run [flags]"},
		"help lists kubelet's": {args: []string{"kubelet", "-h"}, out: "--cloud-provider"},
		"version":              {args: []string{"run", "--version"}, out: "kernelet "},
		"version as kubelet":   {args: []string{"kubelet", "--version"}, out: "Kubernetes v1.37.2+kernelet."}, // kubeadm's preflight parses it
		"version raw":          {args: []string{"run", "--version=raw"}, out: `"goVersion"`},
		"version bad":          {args: []string{"run", "--version=yes"}, code: 2, errs: `invalid --version "yes"`},
		"unknown flag":         {args: []string{"kubelet", "--no-such-flag"}, code: 2, errs: "unknown flag: --no-such-flag"},
		"bad value":            {args: []string{"kubelet", "--max-pods=many"}, code: 2, errs: `invalid argument "many" for "--max-pods"`},
		"positional":           {args: []string{"kubelet", "--v=1", "extra"}, code: 2, errs: "unexpected arguments: extra"},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, errs := run(t, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errs, tc.errs) {
				t.Errorf("exit %d (want %d)\nstdout %.400q (want %q)\nstderr %q (want %q)", code, tc.code, out, tc.out, errs, tc.errs)
			}
		})
	}
}

// TestRunRefusesUnimplementedFlags: every kubelet flag kernelet does not
// act on is refused by name, all of them at once, beside the other
// problems.
func TestRunRefusesUnimplementedFlags(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfailCgroupV1: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "kubelet", "--config", cfg, "--root-dir", dir, "--cloud-provider=external", "--lock-file", "/run/lock/kubelet",
		"--runtime-cgroups=/system.slice/containerd.service", "--cert-dir=/var/lib/kubelet/pki",
		"--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf", "--kubeconfig", filepath.Join(dir, "missing.conf"),
		"--cpu-manager-policy=dynamic", "--enable-server=false")
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, errs)
	}
	for _, want := range []string{
		"kernelet does not support --cloud-provider (kernelet runs with no cloud provider",
		"kernelet does not support --lock-file (kernelet takes no lock file)",
		"kernelet does not support --runtime-cgroups",
		"kernelet does not support --cert-dir yet",
		`--bootstrap-kubeconfig: Invalid value: "/etc/kubernetes/bootstrap-kubelet.conf": kernelet does not support TLS bootstrap yet`,
		`cpuManagerPolicy: Unsupported value: "dynamic": supported values: "none", "static"`, // the flag sets the field
		`enableServer: Invalid value: false: kernelet does not support enableServer`,
		"Flag --cpu-manager-policy has been deprecated, This parameter should be set via the config file",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

// TestFlagWinsOverFile: a flag wins over the file, as kubelet.
func TestFlagWinsOverFile(t *testing.T) {
	f, _, done := parseRun("kubelet", KubeletRootDir, []string{"--max-pods=7", "--logging-format=json"}, io.Discard, io.Discard)
	if done {
		t.Fatal("ended")
	}
	cfg, err := config.ParseWith("f.yaml", []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 50\nfailCgroupV1: false\n"),
		config.Options{Overrides: f.overrides()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Kubelet.MaxPods != 7 || cfg.Kubelet.Logging.Format != "json" {
		t.Errorf("maxPods %d, format %q: the flags must win", cfg.Kubelet.MaxPods, cfg.Kubelet.Logging.Format)
	}
}
