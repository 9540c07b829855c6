package e2e

import (
	"bytes"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/cgroupfs"
	"github.com/kernelet/kernelet/test/env/containerd"
)

// repoRoot is the module root, two levels up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// binaries returns a dir with kernelet, testenv and testbox: $KERNELET_BIN
// (make builds them there) or a temp dir they are built into.
func binaries(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("KERNELET_BIN"); dir != "" {
		ok := true
		for _, b := range []string{"kernelet", "testenv", "testbox"} {
			if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
				ok = false
			}
		}
		if ok {
			return dir
		}
	}
	dir := t.TempDir()
	for _, b := range []struct{ out, pkg string }{
		{"kernelet", "./cmd/kernelet"}, {"testenv", "./hack/testenv"}, {"testbox", "./test/testbox"},
	} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, b.out), b.pkg)
		cmd.Dir = repoRoot(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", b.pkg, err, out)
		}
	}
	return dir
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// make demo: a private containerd and kernelet against it; kernelet's
// healthz turns ok once the real runtime answers; Ctrl-C (SIGINT to the
// foreground process group) stops both and removes containerd's state.
func TestDemoStartsAndCleansUp(t *testing.T) {
	containerd.Require(t)
	bin := binaries(t)
	port, hport, roport := freeTCPPort(t), freeTCPPort(t), freeTCPPort(t)
	runID := env.RunID() + "d"

	cmd := exec.Command(filepath.Join(repoRoot(t), "hack/demo.sh"))
	cmd.Env = append(os.Environ(), "BIN="+bin, "DEMO_PORT="+strconv.Itoa(port), "DEMO_HEALTHZ_PORT="+strconv.Itoa(hport),
		"DEMO_READONLY_PORT="+strconv.Itoa(roport),
		env.RunIDEnv+"="+runID)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		down := exec.Command(filepath.Join(bin, "testenv"), "containerd", "down")
		down.Env = append(os.Environ(), env.RunIDEnv+"="+runID)
		if o, err := down.CombinedOutput(); err != nil {
			t.Errorf("containerd down after the demo: %v\n%s", err, o)
		}
	})

	healthz := "http://127.0.0.1:" + strconv.Itoa(hport) + "/healthz"
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(healthz)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("demo exited early: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("kernelet healthz never turned ok\n%s", out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}

	st := exec.Command(filepath.Join(bin, "kernelet"), "status", "--server", "http://127.0.0.1:"+strconv.Itoa(roport))
	so, err := st.CombinedOutput()
	if err != nil || !strings.Contains(string(so), "Runtime:     containerd") || !strings.Contains(string(so), "RuntimeReady=true") {
		t.Errorf("kernelet status against the demo: %v\n%s", err, so)
	}
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(roport) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var mb bytes.Buffer
	mb.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(mb.String(), "kernelet_build_info{") {
		t.Errorf("/metrics lacks kernelet_build_info")
	}
	t.Logf("demo: kernelet healthy against containerd; status:\n%s", so)

	// The example pods of deploy/examples run from a copy in the demo's own
	// dir, which the demo names; a manifest dropped there runs too.
	m := regexp.MustCompile(`Drop manifests here to run them: (\S+) `).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("demo does not say where to drop manifests:\n%s", out.String())
	}
	dropDir := m[1]
	if !strings.HasPrefix(dropDir, filepath.Join(env.StateBase(), runID)) {
		t.Errorf("manifest dir %s is not in the demo's state dir", dropDir)
	}
	example, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy/examples/besteffort-sleeper.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dropped := strings.Replace(string(example), "name: sleeper\n", "name: dropped\n", 1)
	if err := os.WriteFile(filepath.Join(dropDir, "dropped.yaml"), []byte(dropped), 0o644); err != nil {
		t.Fatal(err)
	}
	demoNode := &agentNode{port: roport, node: "demo-node"}
	podsDeadline := time.Now().Add(30 * time.Second)
	for {
		l, err := demoNode.pods(t.Context())
		running := 0
		if err == nil {
			for _, p := range l.Items {
				if p.Status.Phase == "Running" {
					running++
				}
			}
		}
		if running == 4 {
			break
		}
		if time.Now().After(podsDeadline) {
			t.Fatalf("demo: %d of 4 pods (3 examples, 1 dropped) Running after 30s (err %v)\n%s", running, err, out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}

	stateDirs, _ := containerd.StateDirs(runID)
	// Ctrl-C: SIGINT to the whole foreground process group.
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Fatalf("demo did not stop on Ctrl-C\n%s", out.String())
	}
	if !strings.Contains(out.String(), "demo: stopping containerd and cleaning up") {
		t.Errorf("demo did not clean up:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(repoRoot(t), "deploy/examples/dropped.yaml")); !os.IsNotExist(err) {
		t.Errorf("the dropped manifest reached the checkout's deploy/examples")
	}
	for _, d := range append(stateDirs, filepath.Join(env.StateBase(), runID), dropDir) {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s still exists after Ctrl-C (containerd state, kernelet root dir)", d)
		}
	}
	if _, err := http.Get(healthz); err == nil {
		t.Errorf("kernelet still serving after Ctrl-C")
	}
	if dirs := cgroupfs.PodDirs("/" + runID + "-demo"); len(dirs) > 0 {
		t.Errorf("demo cgroups left after Ctrl-C: %v", dirs)
	}
}
