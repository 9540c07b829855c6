package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	crilogs "k8s.io/cri-client/pkg/logs"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/logs"
	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// The kubelet API's cost over the runtime's own paths: reading a 10 MiB
// container log through GET /containerLogs (HTTPS, the agent's CRI log
// reader) against cri-client's ReadLogs (kubelet's reader) on the same
// file in the benchmark's own process, and behind an HTTPS server there
// (what kubelet's endpoint does), and kernelet's CopyLog behind that
// server (the transport's and the handler's share); and 100 sequential execs through /exec (HTTPS, SPDY upgrade
// proxied to containerd's streaming server) against CRI Exec plus SPDY to
// the streaming server directly. Log reads interleave and compare by
// medians; exec modes alternate (kernelet, direct, direct, kernelet) so
// that load drift weighs on both, the ratio being kernelet's total over
// direct's. Goal: ≤ 1.2×.
const (
	kubeAPILogBytes = 10 << 20
	kubeAPIExecs    = 100
	kubeAPILogReads = 10 // per round
)

func BenchmarkKubeletAPI(b *testing.B) {
	cd := containerd.Shared(b)
	e := newPodStartEnv(b, cd)
	// Named bench-... so that the environment's cleanup removes it.
	manifest := fmt.Appendf(nil, `apiVersion: v1
kind: Pod
metadata: {name: bench-talk, namespace: default}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["/bin/sh", "-c", "l=$(printf '%%099d' 0); yes $l | head -c %d; echo written; exec /testbox sleep"]
`, images.TestboxImage, kubeAPILogBytes)
	if err := os.WriteFile(filepath.Join(e.kManifests, "talk.yaml"), manifest, 0o644); err != nil {
		b.Fatal(err)
	}
	// The whole log stays in the current file (no rotation).
	if err := appendFile(e.cfg, "containerLogMaxSize: 100Mi\n"); err != nil {
		b.Fatal(err)
	}
	e.startKernelet(b)
	ctx := b.Context()
	pod := "bench-talk-" + e.node
	id, logPath := waitLogWritten(b, e, pod)

	secure := "https://127.0.0.1:" + strconv.Itoa(e.securePort)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	viaKernelet := func() (int64, error) {
		resp, err := hc.Get(secure + "/containerLogs/default/" + pod + "/app")
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			return 0, fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return io.Copy(io.Discard, resp.Body)
	}
	direct := func() (int64, error) {
		var n countWriter
		err := crilogs.ReadLogs(ctx, logPath, "", &crilogs.LogOptions{}, e.rs, &n, &n)
		return int64(n), err
	}
	// A reader behind an HTTPS server in the benchmark's own process, 64
	// KiB writes as kernelet's: cri-client's ReadLogs (kubelet's reader:
	// what kubelet's /containerLogs does) and kernelet's own CopyLog (so
	// that the transport's and the handler's share shows).
	serve := func(read func(r *http.Request, w io.Writer) error) func() (int64, error) {
		ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			bw := bufio.NewWriterSize(w, 64<<10)
			_ = read(r, bw)
			_ = bw.Flush()
		}))
		ts.StartTLS()
		b.Cleanup(ts.Close)
		return func() (int64, error) {
			resp, err := ts.Client().Get(ts.URL)
			if err != nil {
				return 0, err
			}
			defer resp.Body.Close()
			return io.Copy(io.Discard, resp.Body)
		}
	}
	overTLS := serve(func(r *http.Request, w io.Writer) error {
		return crilogs.ReadLogs(r.Context(), logPath, "", &crilogs.LogOptions{}, e.rs, w, w)
	})
	copyOverTLS := serve(func(r *http.Request, w io.Writer) error {
		return logs.CopyLog(klog.Background(), logPath, w, w)
	})
	execURL, _ := url.Parse(secure + "/exec/default/" + pod + "/app?command=echo&command=hi&output=1&error=1")
	insecure := &rest.Config{TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	execKernelet := func() error {
		ex, err := remotecommand.NewSPDYExecutor(insecure, http.MethodPost, execURL)
		if err != nil {
			return err
		}
		return streamHi(ctx, ex)
	}
	execDirect := func() error {
		resp, err := e.rs.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"echo", "hi"}, Stdout: true, Stderr: true})
		if err != nil {
			return err
		}
		u, err := url.Parse(resp.Url)
		if err != nil {
			return err
		}
		ex, err := remotecommand.NewSPDYExecutor(&rest.Config{}, http.MethodPost, u)
		if err != nil {
			return err
		}
		return streamHi(ctx, ex)
	}

	reads := map[string]func() (int64, error){"k": viaKernelet, "d": direct, "t": overTLS, "c": copyOverTLS}
	logModes := []string{"k", "d", "t", "c"}
	for range b.N {
		// Log reads interleaved (each round in another order), compared by
		// their medians: this machine's load comes in bursts.
		times := map[string][]time.Duration{}
		var bytesK, bytesD int64
		for i := range 2 * kubeAPILogReads {
			for j := range logModes {
				lm := logModes[(i+j)%len(logModes)]
				start := time.Now()
				n, err := reads[lm]()
				if err != nil {
					b.Fatalf("log read (%s): %v", lm, err)
				}
				times[lm] = append(times[lm], time.Since(start))
				if lm == "k" {
					bytesK = n
				} else {
					bytesD = n
				}
			}
		}
		med := map[string]time.Duration{}
		for lm, ts := range times {
			slices.Sort(ts)
			med[lm] = ts[len(ts)/2]
		}
		var execK, execD time.Duration
		for _, mode := range []string{"k", "d", "d", "k"} {
			start := time.Now()
			for range kubeAPIExecs / 2 {
				f := execDirect
				if mode == "k" {
					f = execKernelet
				}
				if err := f(); err != nil {
					b.Fatalf("exec (%s): %v (log bytes %d/%d)", mode, err, bytesK, bytesD)
				}
			}
			if mode == "k" {
				execK += time.Since(start)
			} else {
				execD += time.Since(start)
			}
		}
		if bytesK != bytesD {
			b.Errorf("log bytes: kernelet %d, direct %d", bytesK, bytesD)
		}
		ratio := func(lm string) float64 { return float64(med["k"]) / float64(med[lm]) }
		ms := func(lm string) time.Duration { return med[lm].Round(100 * time.Microsecond) }
		b.Logf("10 MiB log (%d bytes), median of %d reads each: through kernelet %v; cri-client's reader in-process %v (ratio %.2f×), behind the benchmark's own HTTPS server %v (ratio %.2f×); kernelet's CopyLog behind that server %v (ratio %.2f×)",
			bytesK, 2*kubeAPILogReads, ms("k"), ms("d"), ratio("d"), ms("t"), ratio("t"), ms("c"), ratio("c"))
		b.Logf("%d sequential execs: through kernelet %v (%v each), direct %v (%v each), ratio %.2f×",
			kubeAPIExecs, execK.Round(time.Millisecond), (execK / kubeAPIExecs).Round(time.Microsecond),
			execD.Round(time.Millisecond), (execD / kubeAPIExecs).Round(time.Microsecond), float64(execK)/float64(execD))
		b.ReportMetric(ratio("d"), "logs-ratio")
		b.ReportMetric(ratio("t"), "logs-https-ratio")
		b.ReportMetric(ratio("c"), "logs-copy-https-ratio")
		b.ReportMetric(float64(execK)/float64(execD), "exec-ratio")
	}
}

// waitLogWritten waits until the pod's container wrote its whole log and
// returns the container ID and log path.
func waitLogWritten(b *testing.B, e *podStartEnv, pod string) (id, path string) {
	b.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		list, err := e.rs.ListContainers(b.Context(), &runtimeapi.ContainerFilter{
			State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			LabelSelector: map[string]string{"io.kubernetes.pod.name": pod},
		})
		if err == nil && len(list) == 1 {
			st, err := e.rs.ContainerStatus(b.Context(), list[0].Id, false)
			if err == nil {
				if tail, _ := tailOf(st.GetStatus().GetLogPath(), 4096); bytes.Contains(tail, []byte("written")) {
					return list[0].Id, st.GetStatus().GetLogPath()
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	list, err := e.rs.ListContainers(b.Context(), &runtimeapi.ContainerFilter{})
	var seen []string
	for _, c := range list {
		st, _ := e.rs.ContainerStatus(b.Context(), c.Id, false)
		tail, _ := tailOf(st.GetStatus().GetLogPath(), 300)
		seen = append(seen, fmt.Sprintf("%s %v %s: %q", c.GetLabels()["io.kubernetes.pod.name"], c.State, st.GetStatus().GetLogPath(), tail))
	}
	b.Fatalf("pod %s never wrote its log (containers: %v, %v)\n%s", pod, seen, err, e.kernelet.logTail())
	return "", ""
}

func tailOf(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, min(n, fi.Size()))
	_, err = f.ReadAt(buf, fi.Size()-int64(len(buf)))
	return buf, err
}

func streamHi(ctx context.Context, ex remotecommand.Executor) error {
	var out, errb bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errb}); err != nil {
		return err
	}
	if out.String() != "hi\n" {
		return fmt.Errorf("output %q, stderr %q", out.String(), errb.String())
	}
	return nil
}

func appendFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	return errors.Join(err, f.Close())
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}
