package logs

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	apitest "k8s.io/cri-api/pkg/apis/testing"
	crilogs "k8s.io/cri-client/pkg/logs"
)

// benchLog writes a 10 MiB container output as a CRI log of 100-byte
// lines (about 13.6 MiB on disk).
func benchLog(b *testing.B) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "0.log")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	line := strings.Repeat("0", 99)
	for i := 0; i < (10<<20)/100; i++ {
		fmt.Fprintf(w, "2026-11-25T05:00:%02d.%09dZ stdout F %s\n", i%60, i, line)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return p
}

// The handler (CopyLog for a whole log) against cri-client's ReadLogs
// behind the same HTTPS server, in process (the fake runtime answers the
// lookups), over HTTP/1.1 and HTTP/2.
func BenchmarkServeContainerLogs(b *testing.B) {
	path := benchLog(b)
	labels := map[string]string{"io.kubernetes.pod.uid": "uid-1", "io.kubernetes.container.name": "app"}
	rs := apitest.NewFakeRuntimeService()
	rs.SetFakeContainers([]*apitest.FakeContainer{{ContainerStatus: runtimeapi.ContainerStatus{Id: "c1", Labels: labels, LogPath: path,
		CreatedAt: 1, State: runtimeapi.ContainerState_CONTAINER_RUNNING, Metadata: &runtimeapi.ContainerMetadata{Name: "app"}}}})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	status := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "app", ContainerID: "containerd://c1",
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}
	src := Source{Pods: onePod{pod, status}, Runtime: func() internalapi.RuntimeService { return rs }}
	reader := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bw := bufio.NewWriterSize(w, 64<<10)
		_ = crilogs.ReadLogs(r.Context(), path, "", &crilogs.LogOptions{}, rs, bw, bw)
		_ = bw.Flush()
	})
	for _, tc := range []struct {
		name  string
		h     http.Handler
		http2 bool
	}{{"handler", src, false}, {"handler-http2", src, true}, {"reader", reader, false}, {"reader-http2", reader, true}} {
		b.Run(tc.name, func(b *testing.B) {
			ts := httptest.NewUnstartedServer(tc.h)
			ts.EnableHTTP2 = tc.http2
			ts.StartTLS()
			defer ts.Close()
			c := ts.Client()
			for b.Loop() {
				resp, err := c.Get(ts.URL + "/containerLogs/default/web/app")
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || n != (10<<20)/100*100 {
					b.Fatalf("HTTP %d, %d bytes", resp.StatusCode, n)
				}
				b.SetBytes(n)
			}
		})
	}
}
