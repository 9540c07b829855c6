package logs

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	apitest "k8s.io/cri-api/pkg/apis/testing"
)

type onePod struct {
	pod    *v1.Pod
	status v1.PodStatus
}

func (o onePod) PodByName(ns, name string) (*v1.Pod, v1.PodStatus, bool) {
	if o.pod.Namespace == ns && o.pod.Name == name {
		return o.pod, o.status, true
	}
	return nil, v1.PodStatus{}, false
}

// The handler against the published fake CRI runtime and CRI log files.
func TestServeContainerLogs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	prev := write("0.log", "2026-11-25T04:00:00.000000000Z stdout F previous run\n")
	cur := write("1.log", "2026-11-25T05:00:00.000000000Z stdout F one\n"+
		"2026-11-25T05:00:01.000000000Z stderr P par\n2026-11-25T05:00:01.100000000Z stderr F tial\n"+
		"2026-11-25T05:00:02.000000000Z stdout F three\n")
	labels := map[string]string{"io.kubernetes.pod.uid": "uid-1", "io.kubernetes.container.name": "app"}
	rs := apitest.NewFakeRuntimeService()
	rs.SetFakeContainers([]*apitest.FakeContainer{
		{ContainerStatus: runtimeapi.ContainerStatus{Id: "c0", Labels: labels, LogPath: prev, CreatedAt: 1, State: runtimeapi.ContainerState_CONTAINER_EXITED,
			Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: 0}}},
		{ContainerStatus: runtimeapi.ContainerStatus{Id: "c1", Labels: labels, LogPath: cur, CreatedAt: 2, State: runtimeapi.ContainerState_CONTAINER_EXITED,
			Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: 1}}},
	})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}, {Name: "side"}, {Name: "late"}}}}
	status := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{
		{Name: "app", ContainerID: "containerd://c1", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ContainerID: "containerd://c1"}},
			LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ContainerID: "containerd://c0"}}},
		{Name: "side", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}}
	src := Source{Pods: onePod{pod, status}, Runtime: func() internalapi.RuntimeService { return rs },
		Now: func() time.Time { return time.Date(2026, 11, 25, 5, 0, 1, 500000000, time.UTC) }}
	cases := map[string]struct {
		method, path string
		wantCode     int
		wantBody     string
	}{
		"all":           {"GET", "/containerLogs/default/web/app", 200, "one\npartial\nthree\n"},
		"tail":          {"GET", "/containerLogs/default/web/app?tailLines=1", 200, "three\n"},
		"since":         {"GET", "/containerLogs/default/web/app?sinceSeconds=1", 200, "partial\nthree\n"},
		"timestamps":    {"GET", "/containerLogs/default/web/app?tailLines=1&timestamps=true", 200, "2026-11-25T05:00:02.000000000Z three\n"},
		"limit":         {"GET", "/containerLogs/default/web/app?limitBytes=5", 200, "one\np"},
		"stdout only":   {"GET", "/containerLogs/default/web/app?stream=Stdout", 200, "one\nthree\n"},
		"previous":      {"GET", "/containerLogs/default/web/app?previous=true", 200, "previous run\n"},
		"waiting":       {"GET", "/containerLogs/default/web/side", 400, `container "side" in pod "web" is waiting to start: trying and failing to pull image`},
		"no status":     {"GET", "/containerLogs/default/web/late", 400, `container "late" in pod "web" is not available`},
		"no previous":   {"GET", "/containerLogs/default/web/side?previous=true", 400, `previous terminated container "side" in pod "web" not found`},
		"unknown pod":   {"GET", "/containerLogs/default/nope/app", 404, `pod "nope" does not exist`},
		"unknown ctr":   {"GET", "/containerLogs/default/web/nope", 404, `container "nope" not found in pod "web"`},
		"bad query":     {"GET", "/containerLogs/default/web/app?tailLines=x", 400, `{"message": "Unable to decode query."}`},
		"invalid query": {"GET", "/containerLogs/default/web/app?limitBytes=0", 422, `{"message": "Invalid request."}`},
		"short path":    {"GET", "/containerLogs/default/web", 404, "404 page not found\n"},
		"post":          {"POST", "/containerLogs/default/web/app", 405, "405: Method Not Allowed"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			src.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.wantCode || rec.Body.String() != tc.wantBody {
				t.Errorf("%s %s = %d %q, want %d %q", tc.method, tc.path, rec.Code, rec.Body.String(), tc.wantCode, tc.wantBody)
			}
		})
	}
	none := Source{Pods: onePod{pod, status}, Runtime: func() internalapi.RuntimeService { return nil }}
	rec := httptest.NewRecorder()
	none.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/containerLogs/default/web/app", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("no runtime = %d", rec.Code)
	}
}

// While a crash-looping container waits for its back-off, its last
// termination is the newest instance: --previous reads that one (kubelet
// resolves previous through the status), even when the instance before it
// was garbage collected.
func TestPreviousFollowsLastTermination(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "3.log")
	if err := os.WriteFile(p, []byte("2026-11-25T05:00:00.000000000Z stdout F last crash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"io.kubernetes.pod.uid": "uid-1", "io.kubernetes.container.name": "app"}
	rs := apitest.NewFakeRuntimeService()
	rs.SetFakeContainers([]*apitest.FakeContainer{
		{ContainerStatus: runtimeapi.ContainerStatus{Id: "c3", Labels: labels, LogPath: p, CreatedAt: 3, State: runtimeapi.ContainerState_CONTAINER_EXITED,
			Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: 3}}},
	})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	status := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "app",
		State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1, ContainerID: "containerd://c3"}}}}}
	src := Source{Pods: onePod{pod, status}, Runtime: func() internalapi.RuntimeService { return rs }}
	rec := httptest.NewRecorder()
	src.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/containerLogs/default/web/app?previous=true", nil))
	if rec.Code != 200 || rec.Body.String() != "last crash\n" {
		t.Errorf("previous = %d %q, want the last crash's log", rec.Code, rec.Body.String())
	}
}
