package logs

import (
	"errors"
	"net/url"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
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

func TestPickInstance(t *testing.T) {
	c := func(id string, created int64, attempt uint32) *runtimeapi.Container {
		return &runtimeapi.Container{Id: id, CreatedAt: created, Metadata: &runtimeapi.ContainerMetadata{Attempt: attempt}}
	}
	list := []*runtimeapi.Container{c("a", 1, 0), c("c", 3, 2), c("b", 2, 1)}
	if got, ok := PickInstance(list, false); !ok || got.Id != "c" {
		t.Errorf("current = %v", got)
	}
	if got, ok := PickInstance(list, true); !ok || got.Id != "b" {
		t.Errorf("previous = %v", got)
	}
	if _, ok := PickInstance(list[:1], true); ok {
		t.Error("no previous instance expected")
	}
	if _, ok := PickInstance(nil, false); ok {
		t.Error("no instance expected")
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
