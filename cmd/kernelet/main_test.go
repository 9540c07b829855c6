package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	logsapi "k8s.io/component-base/logs/api/v1"
)

const testdata = "../../agent/config/testdata/"

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	resetLogging(t)
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// resetLogging lets the next Main of this process apply its logging
// configuration again (component-base applies it once per process, as a
// command runs once), once the test's Main has returned.
func resetLogging(t *testing.T) {
	t.Cleanup(func() {
		if err := logsapi.ResetForTest(nil); err != nil {
			t.Errorf("reset logging: %v", err)
		}
	})
}

func TestConfigValidate(t *testing.T) {
	code, out, errs := run(t, "config", "validate", testdata+"kubelet-config.yaml")
	if code != 0 || !strings.Contains(out, "apiVersion: kubelet.config.k8s.io/v1beta1") || !strings.Contains(out, "containerRuntimeEndpoint: unix:///run/containerd/containerd.sock") {
		t.Errorf("real cluster config: exit %d\nstdout: %.300s\nstderr: %s", code, out, errs)
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nevictionHard: {memory.available: \"lots\"}\nnodeStatusUpdateFrequency: -1s\n"), 0o644)
	code, out, errs = run(t, "config", "validate", bad)
	if code != 1 || out != "" {
		t.Errorf("bad file: exit %d, stdout %q", code, out)
	}
	for _, want := range []string{bad + ": evictionHard[memory.available]", bad + ": nodeStatusUpdateFrequency"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}

	code, _, errs = run(t, "config", "validate", testdata+"warnings.yaml")
	if code != 0 || !strings.Contains(errs, "warning: "+testdata+"warnings.yaml:4: notAKubeletField: unknown field (ignored)") {
		t.Errorf("warnings: exit %d, stderr %s", code, errs)
	}
	if code, _, _ := run(t, "config", "validate"); code != 2 {
		t.Errorf("missing FILE must be a usage error, exit %d", code)
	}
	if code, _, errs := run(t, "config", "validate", "/does/not/exist.yaml"); code != 1 || !strings.Contains(errs, "/does/not/exist.yaml") {
		t.Errorf("missing file: exit %d %s", code, errs)
	}
}

func TestRunRefusesWithEveryProblem(t *testing.T) {
	code, _, errs := run(t, "run", "--config", testdata+"kubelet-config.yaml", "--kubeconfig", "/no/such/kubeconfig",
		"--root-dir", "relative", "--container-runtime-endpoint", "tcp://x", "--node-ip", "192.0.2.1,192.0.2.2", "--bpf", "maybe")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, errs)
	}
	problems := 7
	if cgroupV1() {
		// kubelet's default failCgroupV1 refuses a host with cgroup v1
		// hierarchies (this CI host is hybrid).
		problems++
		if !strings.Contains(errs, "failCgroupV1: Invalid value: true: kubelet is configured to not run on a host using cgroup v1") {
			t.Errorf("stderr lacks the failCgroupV1 refusal:\n%s", errs)
		}
	}
	for _, want := range []string{
		fmt.Sprintf("refusing to start, %d problem(s)", problems),
		`--bpf: Unsupported value: "maybe": supported values: "auto", "off"`,
		`containerRuntimeEndpoint: Invalid value: "tcp://x"`, // the flag wins over the file, and is validated
		`cgroupDriver: Invalid value: "systemd": needs systemd as PID 1`,
		`authentication.x509.clientCAFile: Invalid value: "/etc/kubernetes/pki/ca.pem": file does not exist`,
		`--kubeconfig: Invalid value: "/no/such/kubeconfig": file does not exist`,
		`--root-dir: Invalid value: "relative"`,
		`--node-ip: Invalid value: "192.0.2.1,192.0.2.2": two addresses must be of different families`,
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// kernelet run serves healthz and the API; status reports what it serves
// (through the local socket under the root dir); cancelling (what SIGTERM
// does) stops it with exit 0.
func TestRunAndStatus(t *testing.T) {
	port, hport := freePort(t), freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	var errb bytes.Buffer
	resetLogging(t) // after run's stop below
	root := t.TempDir()
	cfg := filepath.Join(root, "config.yaml")
	// Standalone: no API server for webhook authentication/authorization.
	if err := os.WriteFile(cfg, []byte(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
failCgroupV1: false
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	go func() {
		done <- Main(ctx, []string{"run", "--config", cfg, "--port", port, "--healthz-port", hport, "--root-dir", root,
			"--hostname-override", "Test-Node", "--container-runtime-endpoint", "unix:///nonexistent/kernelet-test.sock"}, &bytes.Buffer{}, &errb)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://127.0.0.1:" + hport + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusInternalServerError {
				t.Errorf("healthz without a runtime = %d, want 500", resp.StatusCode)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("healthz never came up: %v\n%s", err, errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	code, out, errs := run(t, "status", "--root-dir", root)
	if code != 1 {
		t.Errorf("status of an agent without runtime: exit %d, want 1", code)
	}
	for _, want := range []string{"Node:        test-node (standalone)", "Health:      UNHEALTHY (HTTP 500)", "[+]ping ok", "[-]runtime failed: not connected to the container runtime", "Runtime:     not connected:", "Eviction:    imagefs.available<15%"} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s%s", want, out, errs)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("run exit %d after shutdown, want 0\n%s", code, errb.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not stop")
	}
	if code, _, errs := run(t, "status", "--server", "unix://"+filepath.Join(root, "kernelet.sock"), "--timeout", "1s"); code != 1 || !strings.Contains(errs, "not reachable") {
		t.Errorf("status of a stopped agent: exit %d %s", code, errs)
	}
}

func TestDeployExampleConfigValidates(t *testing.T) {
	if code, _, errs := run(t, "config", "validate", "--quiet", "../../deploy/config.yaml"); code != 0 || errs != "" {
		t.Errorf("deploy/config.yaml: exit %d\n%s", code, errs)
	}
}

// A --node-ip that is not an address of this host refuses the start.
func TestRunRefusesForeignNodeIP(t *testing.T) {
	code, _, errs := run(t, "run", "--node-ip", "203.0.113.77", "--root-dir", t.TempDir(),
		"--container-runtime-endpoint", "unix:///nonexistent/kernelet-test.sock")
	want := `--node-ip: Invalid value: "203.0.113.77": 203.0.113.77 is not an address of this host's interfaces`
	if code != 1 || !strings.Contains(errs, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant %q", code, errs, want)
	}
}

// `kernelet config validate` on a file with every value kernelet refuses
// for not doing it: each is named with its reason, and the file fails.
func TestConfigValidateUnimplemented(t *testing.T) {
	code, out, errs := run(t, "config", "validate", testdata+"unimplemented.yaml")
	if code != 1 || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, errs)
	}
	for _, want := range []string{
		`cpuManagerPolicy: Unsupported value: "dynamic": supported values: "none", "static"`,
		`memoryManagerPolicy: Unsupported value: "BestEffort": supported values: "None", "Static"`,
		`topologyManagerPolicy: Unsupported value: "numa-everywhere": supported values: "none", "best-effort", "restricted", "single-numa-node"`,
		`memorySwap.swapBehavior: Unsupported value: "UnlimitedSwap": supported values: "", "LimitedSwap", "NoSwap"`,
		`shutdownGracePeriod: Invalid value: "30s": kernelet has no graceful node shutdown`,
		`shutdownGracePeriodByPodPriority: Invalid value: 1: kernelet has no graceful node shutdown`,
		`enableSystemLogQuery: Invalid value: true: kernelet has no node log query`,
		`crashLoopBackOff.maxContainerRestartPeriod: Invalid value: "10m0s": must be set between 1s and 300s`,
		`imagePullCredentialsVerificationPolicy: Invalid value: "AlwaysVerify": kernelet does not verify`,
		`volumePluginDir: Invalid value: "/opt/flex": kernelet runs no FlexVolume drivers`,
		`logging.format: Unsupported value: "yaml": supported values: "json", "text"`,
		`enableServer: Invalid value: false: kernelet does not support enableServer (kernelet always serves the kubelet API): must be unset or true`,
		`podCIDR: Invalid value: "10.100.0.0/24": kernelet does not support podCIDR`,
		`featureGates[NotAGate]: Invalid value: true: unrecognized feature gate: NotAGate`,
		`featureGates[InPlacePodVerticalScaling]: Invalid value: false: cannot set feature gate InPlacePodVerticalScaling to false, feature is locked to true`,
		`featureGates[CRIListStreaming]: Invalid value: true: kernelet does not implement CRIListStreaming (ALPHA, default false in kubelet v1.37.2)`,
		`featureGates[GracefulNodeShutdown]: Invalid value: true: kernelet does not implement GracefulNodeShutdown (BETA, default true in kubelet v1.37.2)`,
		`featureGates[ReloadKubeletClientCAFile]: Invalid value: false: kernelet always acts as ReloadKubeletClientCAFile=true`,
		`featureGates[WatchListClient]: Invalid value: false: kernelet keeps WatchListClient at its default, true`,
	} {
		if !strings.Contains(errs, testdata+"unimplemented.yaml: "+want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if strings.Contains(errs, "ContainerCheckpoint]") || strings.Contains(errs, "KubeletCrashLoopBackOffMax]") || !strings.Contains(errs, "19 invalid value(s)") {
		t.Errorf("want exactly the 19 refusals above:\n%s", errs)
	}
	if want := "warning: " + testdata + "unimplemented.yaml: hairpinMode: kernelet does not act on hairpinMode"; strings.Count(errs, "warning: ") != 1 || !strings.Contains(errs, want) {
		t.Errorf("want the one warning %q:\n%s", want, errs)
	}
}
