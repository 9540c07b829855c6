package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// systemdEnv reads the Environment= lines of a unit (or drop-in) and the
// lines of an EnvironmentFile: KEY=value or KEY="value", later ones win.
func systemdEnv(t *testing.T, env map[string]string, unitLines []string, envFile string) {
	t.Helper()
	set := func(kv string) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return
		}
		if uq, err := strconv.Unquote(v); err == nil {
			v = uq
		}
		env[k] = v
	}
	for _, l := range unitLines {
		if kv, ok := strings.CutPrefix(l, "Environment="); ok {
			if uq, err := strconv.Unquote(kv); err == nil {
				kv = uq
			}
			set(kv)
		}
	}
	if envFile == "" {
		return
	}
	f, err := os.Open(envFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			set(l)
		}
	}
}

// execStart is the command line systemd runs for the unit's last
// ExecStart=: each $VAR is replaced by the words of its value, as systemd
// does for an unbraced variable.
func execStart(t *testing.T, unitLines []string, env map[string]string) []string {
	t.Helper()
	var last string
	for _, l := range unitLines {
		if v, ok := strings.CutPrefix(l, "ExecStart="); ok && v != "" {
			last = v
		}
	}
	var argv []string
	for _, w := range strings.Fields(last) {
		if name, ok := strings.CutPrefix(w, "$"); ok {
			argv = append(argv, strings.Fields(env[name])...)
			continue
		}
		argv = append(argv, w)
	}
	if len(argv) == 0 {
		t.Fatal("no ExecStart in the drop-in")
	}
	return argv
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\n")
}

// TestKubeadmCommandLine starts kernelet the way kubeadm's systemd drop-in
// for kubelet v1.37 (deploy/kubeadm/10-kubeadm.conf) starts kubelet: the
// binary named kubelet, the drop-in's KUBELET_KUBECONFIG_ARGS and
// KUBELET_CONFIG_ARGS, KUBELET_KUBEADM_ARGS from a kubeadm-flags.env
// (--hostname-override, --register-with-taints, --container-runtime-endpoint,
// --node-ip, --node-labels, --v) and KUBELET_EXTRA_ARGS from
// /etc/default/kubelet (here the test's --root-dir, and JSON logs). The drop-in's paths
// are the test's own files; the kubeconfig exists, so the bootstrap
// kubeconfig is not needed (as with kubelet). Against the real
// kube-apiserver the Node registers with the labels and taint and goes
// Ready.
func TestKubeadmCommandLine(t *testing.T) {
	c := newClusterNode(t)
	dir := t.TempDir()
	kubelet := filepath.Join(dir, "kubelet") // kernelet under kubelet's name
	if err := os.Symlink(c.bin, kubelet); err != nil {
		t.Fatal(err)
	}
	bootstrap := filepath.Join(dir, "bootstrap-kubelet.conf")
	if err := os.WriteFile(bootstrap, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	flagsEnv := filepath.Join(dir, "kubeadm-flags.env")
	const label = "node.kubernetes.io/pool=kernelet"
	if err := os.WriteFile(flagsEnv, []byte(fmt.Sprintf("KUBELET_KUBEADM_ARGS=%q\n", strings.Join([]string{
		"--hostname-override=" + c.node, "--register-with-taints=kernelet.dev/agent=true:NoSchedule",
		"--container-runtime-endpoint=" + c.endpoint, "--node-ip=" + c.nodeIP, "--node-labels=" + label, "--v=2"}, " "))), 0o644); err != nil {
		t.Fatal(err)
	}
	defaults := filepath.Join(dir, "default-kubelet")
	if err := os.WriteFile(defaults, []byte(fmt.Sprintf("KUBELET_EXTRA_ARGS=\"--root-dir=%s --logging-format=json\"\n", c.root)), 0o644); err != nil {
		t.Fatal(err)
	}
	// The drop-in, with the test's files for kubeadm's paths.
	paths := strings.NewReplacer("/etc/kubernetes/bootstrap-kubelet.conf", bootstrap, "/etc/kubernetes/kubelet.conf", c.kubeconfig,
		"/var/lib/kubelet/config.yaml", c.cfg, "/usr/bin/kubelet", kubelet)
	var unit []string
	for _, l := range readLines(t, "../../deploy/kubeadm/10-kubeadm.conf") {
		unit = append(unit, paths.Replace(l))
	}
	env := map[string]string{}
	systemdEnv(t, env, unit, flagsEnv)
	systemdEnv(t, env, nil, defaults)
	argv := execStart(t, unit, env)
	t.Logf("command line: %s", strings.Join(argv, " "))

	logf, err := os.OpenFile(filepath.Join(filepath.Dir(c.cfg), "kernelet.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	// The Node is this start's registration, not a former test's.
	if _, err := c.admin.CoreV1().Nodes().Get(t.Context(), c.node, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Node %s before the start: %v, want NotFound", c.node, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logf.Close()
	})

	node, ready := c.waitReady(t, 90*time.Second, func() error {
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("kernelet exited: %v\n%s", err, c.log(t))
		default:
			return nil
		}
	})
	t.Logf("Node %s Ready %v after kernelet started as kubelet", c.node, ready.Round(time.Millisecond))
	if node.Labels["node.kubernetes.io/pool"] != "kernelet" {
		t.Errorf("node labels %v lack %s", node.Labels, label)
	}
	var tainted bool
	for _, taint := range node.Spec.Taints {
		tainted = tainted || (taint.Key == "kernelet.dev/agent" && taint.Value == "true" && taint.Effect == v1.TaintEffectNoSchedule)
	}
	if !tainted {
		t.Errorf("node taints %v lack kernelet.dev/agent=true:NoSchedule", node.Spec.Taints)
	}
	var addr bool
	for _, a := range node.Status.Addresses {
		addr = addr || (a.Type == v1.NodeInternalIP && a.Address == c.nodeIP)
	}
	if !addr {
		t.Errorf("node addresses %v lack InternalIP %s (--node-ip)", node.Status.Addresses, c.nodeIP)
	}
	if !strings.HasPrefix(node.Status.NodeInfo.KubeletVersion, "v1.37.2+kernelet") {
		t.Errorf("kubeletVersion %q", node.Status.NodeInfo.KubeletVersion)
	}
	log := c.log(t)
	if !strings.Contains(log, "Flag --container-runtime-endpoint has been deprecated") {
		t.Errorf("kubelet's deprecation message for --container-runtime-endpoint missing from the log:\n%.2000s", log)
	}
	// logging.format json (component-base's JSON format, as kubelet's).
	var started map[string]any
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, `"msg":"Starting kernelet"`) {
			if err := json.Unmarshal([]byte(l), &started); err != nil {
				t.Errorf("not a JSON log line: %v: %s", err, l)
			}
		}
	}
	if started["node"] != c.node || started["logger"] != "kernelet" {
		t.Errorf("no JSON line \"Starting kernelet\" for node %s in the log:\n%.2000s", c.node, log)
	}
}
