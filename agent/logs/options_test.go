package logs

import (
	"errors"
	"net/url"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestParseOptions(t *testing.T) {
	now := time.Date(2026, 11, 25, 5, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		query   string
		wantErr error
		check   func(t *testing.T, q string)
	}{
		"empty":            {"", nil, nil},
		"follow etc":       {"follow=true&previous=1&timestamps=yes", nil, nil},
		"false values":     {"follow=false&previous=0&timestamps=f", nil, nil},
		"tail lines":       {"tailLines=10", nil, nil},
		"legacy tail":      {"tail=5", nil, nil},
		"legacy tail all":  {"tail=all", nil, nil},
		"bad int":          {"tailLines=x", ErrDecode, nil},
		"bad time":         {"sinceTime=yesterday", ErrDecode, nil},
		"negative tail":    {"tailLines=-1", ErrInvalid, nil},
		"zero limit":       {"limitBytes=0", ErrInvalid, nil},
		"zero since":       {"sinceSeconds=0", ErrInvalid, nil},
		"both since":       {"sinceSeconds=5&sinceTime=2026-11-25T04:00:00Z", ErrInvalid, nil},
		"stream stdout":    {"stream=Stdout", nil, nil},
		"stream with tail": {"stream=Stderr&tailLines=3", ErrInvalid, nil},
		"stream unknown":   {"stream=Both", ErrInvalid, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.query)
			_, err := ParseOptions(q)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
		})
	}
	q, _ := url.ParseQuery("follow=true&previous=1&timestamps=yes&tail=5&limitBytes=100&sinceSeconds=60")
	o, err := ParseOptions(q)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Follow || !o.Previous || !o.Timestamps || *o.TailLines != 5 || *o.LimitBytes != 100 || *o.SinceSeconds != 60 {
		t.Errorf("options %+v", o)
	}
	c := CRIOptions(o, now)
	if !c.Follow || !c.Timestamp || *c.TailLines != 5 || *c.LimitBytes != 100 || !c.Since.Equal(now.Add(-time.Minute)) {
		t.Errorf("CRI options %+v", c)
	}
	q, _ = url.ParseQuery("tail=all&sinceTime=2026-11-25T04:00:00Z")
	o, _ = ParseOptions(q)
	if o.TailLines != nil || CRIOptions(o, now).Since != time.Date(2026, 11, 25, 4, 0, 0, 0, time.UTC) {
		t.Errorf("tail=all / sinceTime: %+v", o)
	}
}

func TestContainerLogID(t *testing.T) {
	term := func(id string) *v1.ContainerStateTerminated { return &v1.ContainerStateTerminated{ContainerID: id} }
	st := func(cs v1.ContainerStatus) v1.PodStatus {
		cs.Name = "app"
		return v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{cs}}
	}
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	waiting := func(r string) v1.ContainerState {
		return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: r}}
	}
	cases := map[string]struct {
		status   v1.PodStatus
		previous bool
		want     string // an ID, or the error
	}{
		"running":                 {st(v1.ContainerStatus{ContainerID: "cri://c2", State: running}), false, "cri://c2"},
		"previous":                {st(v1.ContainerStatus{ContainerID: "cri://c2", State: running, LastTerminationState: v1.ContainerState{Terminated: term("cri://c1")}}), true, "cri://c1"},
		"no previous":             {st(v1.ContainerStatus{ContainerID: "cri://c2", State: running}), true, `previous terminated container "app" in pod "web" not found`},
		"terminated":              {st(v1.ContainerStatus{State: v1.ContainerState{Terminated: term("cri://c3")}}), false, "cri://c3"},
		"terminated without id":   {st(v1.ContainerStatus{State: v1.ContainerState{Terminated: term("")}}), false, `container "app" in pod "web" is terminated`},
		"back-off: the last exit": {st(v1.ContainerStatus{State: waiting("CrashLoopBackOff"), LastTerminationState: v1.ContainerState{Terminated: term("cri://c1")}}), false, "cri://c1"},
		"waiting":                 {st(v1.ContainerStatus{State: waiting("ContainerCreating")}), false, `container "app" in pod "web" is waiting to start: ContainerCreating`},
		"image back-off":          {st(v1.ContainerStatus{State: waiting("ImagePullBackOff")}), false, `container "app" in pod "web" is waiting to start: trying and failing to pull image`},
		"image pull error":        {st(v1.ContainerStatus{State: waiting("ErrImagePull")}), false, `container "app" in pod "web" is waiting to start: image can't be pulled`},
		"no state":                {st(v1.ContainerStatus{}), false, `container "app" in pod "web" is waiting to start - no logs yet`},
		"no status":               {v1.PodStatus{}, false, `container "app" in pod "web" is not available`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			id, err := ContainerLogID("web", tc.status, "app", tc.previous)
			got := id
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("ContainerLogID = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 5}
	for _, s := range []string{"ab", "cd", "ef", "0123456789", "x"} {
		_, _ = b.Write([]byte(s))
	}
	if string(b.b) != "6789x" {
		t.Errorf("tail %q", b.b)
	}
}
