package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/cgroupfs"
	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// TestTraceOOMPod: `kernelet trace oom --json --count 1 --container-runtime-endpoint`
// names the pod and container of a testbox container (limit 32Mi) that
// allocates 64 MiB and is OOM killed.
func TestTraceOOMPod(t *testing.T) {
	env.RequireRoot(t)
	cd := containerd.Shared(t)
	rs, _ := criClients(t, cd)
	ctx := t.Context()

	bin := filepath.Join(t.TempDir(), "kernelet")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/kernelet/kernelet/cmd/kernelet").CombinedOutput(); err != nil {
		t.Fatalf("build kernelet: %v\n%s", err, out)
	}

	grace := int64(2)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "oom-victim", Namespace: env.RunID(), UID: types.UID(env.RunID() + "-oom-victim")},
		Spec: v1.PodSpec{
			HostNetwork:                   true,
			TerminationGracePeriodSeconds: &grace,
			RestartPolicy:                 v1.RestartPolicyNever,
			Containers: []v1.Container{{
				Name: "hog", Image: images.TestboxImage, Args: []string{"alloc", "--mib", "64"},
				Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("32Mi")}},
			}},
		},
	}
	var out bytes.Buffer
	trace := exec.Command(bin, "trace", "oom", "--json", "--count", "1", "--timeout", "90s",
		"--container-runtime-endpoint", cd.Endpoint(), "--pod", pod.Namespace+"/"+pod.Name)
	trace.Stdout = &out
	stderrPipe, err := trace.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := trace.Start(); err != nil {
		t.Fatal(err)
	}
	// The trace says when it is attached; everything it prints on stderr is
	// kept for failure messages.
	var errb lockedBuffer
	attached := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderrPipe)
		once := false
		for sc.Scan() {
			errb.WriteLine(sc.Text())
			if !once && strings.Contains(sc.Text(), "tracing via") {
				once = true
				close(attached)
			}
		}
	}()
	traceDone := make(chan error, 1)
	go func() { traceDone <- trace.Wait() }()
	t.Cleanup(func() {
		_ = trace.Process.Kill()
		<-traceDone
	})
	select {
	case <-attached:
	case <-time.After(60 * time.Second):
		t.Fatalf("kernelet trace did not attach within 60 s: %s", errb.String())
	}

	parent := cgroupfs.PodParent(t, pod.Name, 256<<20)
	sbCfg, err := podconfig.SandboxConfig(pod, podconfig.SandboxOptions{CgroupParent: parent, PodLogsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	c := &pod.Spec.Containers[0]
	if err := os.MkdirAll(filepath.Join(sbCfg.LogDirectory, c.Name), 0o755); err != nil {
		t.Fatal(err)
	}
	ctrCfg, err := podconfig.ContainerConfig(pod, c, podconfig.ContainerOptions{NodeMemoryCapacity: memTotal(t)})
	if err != nil {
		t.Fatal(err)
	}
	podID := criRunPod(t, rs, sbCfg)
	ctrID, err := rs.CreateContainer(ctx, podID, ctrCfg, sbCfg)
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if err := rs.StartContainer(ctx, ctrID); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	st := criWaitState(t, rs, ctrID, runtimeapi.ContainerState_CONTAINER_EXITED)
	t.Logf("container exited %d reason %s", st.GetExitCode(), st.GetReason())

	select {
	case err := <-traceDone:
		traceDone <- err
		if err != nil {
			t.Fatalf("trace: %v\nstderr: %s", err, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("trace printed nothing within 30s after the kill\nstderr: %s", errb.String())
	}
	t.Logf("%s", out.String())
	var row struct {
		Comm, Cgroup string
		Pod          *struct{ Namespace, Name, UID, Container string }
	}
	if err := json.Unmarshal(out.Bytes(), &row); err != nil {
		t.Fatalf("trace output %q: %v", out.String(), err)
	}
	if row.Pod == nil || row.Pod.Namespace != pod.Namespace || row.Pod.Name != pod.Name || row.Pod.UID != string(pod.UID) || row.Pod.Container != "hog" {
		t.Errorf("pod = %+v, want %s/%s uid %s container hog", row.Pod, pod.Namespace, pod.Name, pod.UID)
	}
	if row.Comm != "testbox" || !strings.HasSuffix(row.Cgroup, ctrID) {
		t.Errorf("comm %q cgroup %q, want testbox in .../%s", row.Comm, row.Cgroup, ctrID)
	}
}

// lockedBuffer collects lines written by one goroutine and read by another.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) WriteLine(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
	l.b.WriteByte('\n')
}

// Write makes it an io.Writer for a child process's output.
func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
