package sources

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"

	"github.com/kernelet/kernelet/internal/podutil"
)

// pod builds a pod from a short spec: "name" or "name:version" with
// optional modifiers after "+": "+status=Running", "+deleting",
// "+label", "+seen=...", "+spec" (version changes image and UID; spec
// changes the image only).
func pod(spec string) *v1.Pod {
	spec, mods, _ := strings.Cut(spec, "+")
	name, version, _ := strings.Cut(spec, ":")
	if version == "" {
		version = "1"
	}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "default", UID: types.UID(name + "-" + version),
		Annotations: map[string]string{podutil.AnnotationConfigSeen: "t0"},
	}}
	p.Spec.Containers = []v1.Container{{Name: "c", Image: "img:" + version}}
	for m := range strings.SplitSeq(mods, "+") {
		switch k, v, _ := strings.Cut(m, "="); k {
		case "status":
			p.Status.Phase = v1.PodPhase(v)
		case "deleting":
			ts := metav1.NewTime(time.Unix(100, 0))
			p.DeletionTimestamp = &ts
		case "label":
			p.Labels = map[string]string{"l": "1"}
		case "spec":
			p.Spec.Containers[0].Image = "img:other"
		case "seen":
			p.Annotations[podutil.AnnotationConfigSeen] = v
		}
	}
	return p
}

func pods(specs ...string) []*v1.Pod {
	var out []*v1.Pod
	for _, s := range specs {
		out = append(out, pod(s))
	}
	return out
}

func byName(ps []*v1.Pod) map[string]*v1.Pod {
	m := map[string]*v1.Pod{}
	for _, p := range ps {
		m[FullName(p)] = p
	}
	return m
}

// describe renders updates as "OP:a,b OP:c".
func describe(ups []Update) string {
	var parts []string
	for _, u := range ups {
		var names []string
		for _, p := range u.Pods {
			names = append(names, p.Name)
		}
		parts = append(parts, u.Op.String()+":"+strings.Join(names, ","))
	}
	return strings.Join(parts, " ")
}

func TestDiffSequences(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		sets [][]string
		want []string // per set
	}{
		"first set adds sorted": {
			sets: [][]string{{"c", "a", "b"}},
			want: []string{"ADD:a,b,c"},
		},
		"empty first set": {
			sets: [][]string{{}},
			want: []string{""},
		},
		"same set twice is quiet": {
			sets: [][]string{{"a", "b"}, {"b", "a"}},
			want: []string{"ADD:a,b", ""},
		},
		"seen time alone is no change": {
			sets: [][]string{{"a"}, {"a+seen=t1"}},
			want: []string{"ADD:a", ""},
		},
		"changed spec, same UID, updates": {
			sets: [][]string{{"a", "b"}, {"a+spec", "b"}},
			want: []string{"ADD:a,b", "UPDATE:a"},
		},
		"new UID under the same name replaces the pod": {
			sets: [][]string{{"a", "b"}, {"a:2", "b"}},
			want: []string{"ADD:a,b", "REMOVE:a ADD:a"},
		},
		"label change updates": {
			sets: [][]string{{"a"}, {"a+label"}},
			want: []string{"ADD:a", "UPDATE:a"},
		},
		"gone pods are removed": {
			sets: [][]string{{"a", "b", "c"}, {"b"}, {}},
			want: []string{"ADD:a,b,c", "REMOVE:a,c", "REMOVE:b"},
		},
		"every op in order": {
			sets: [][]string{
				{"keep", "old", "upd", "del", "st"},
				{"keep", "new", "upd+spec", "del+deleting", "st+status=Running"},
			},
			want: []string{"ADD:del,keep,old,st,upd", "REMOVE:old ADD:new UPDATE:upd DELETE:del RECONCILE:st"},
		},
		"status only reconciles": {
			sets: [][]string{{"a+status=Pending"}, {"a+status=Running"}, {"a+status=Running"}},
			want: []string{"ADD:a", "RECONCILE:a", ""},
		},
		"re-added after removal": {
			sets: [][]string{{"a"}, {}, {"a"}},
			want: []string{"ADD:a", "REMOVE:a", "ADD:a"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			had := map[string]*v1.Pod{}
			for i, set := range tc.sets {
				var ups []Update
				ups, had = Diff(SourceFile, had, byName(pods(set...)))
				if got := describe(ups); got != tc.want[i] {
					t.Errorf("set %d %v: %q, want %q", i, set, got, tc.want[i])
				}
				for _, u := range ups {
					if u.Source != SourceFile {
						t.Errorf("source %q", u.Source)
					}
				}
			}
		})
	}
}

func TestDiffKeepsFirstSeen(t *testing.T) {
	t.Parallel()
	_, had := Diff(SourceFile, nil, byName(pods("a")))
	_, had = Diff(SourceFile, had, byName(pods("a+seen=t1")))
	if got := had["a_default"].Annotations[podutil.AnnotationConfigSeen]; got != "t0" {
		t.Errorf("seen %q, want the first t0", got)
	}
	ups, had := Diff(SourceFile, had, byName(pods("a+seen=t2+status=Running")))
	if describe(ups) != "RECONCILE:a" || had["a_default"].Annotations[podutil.AnnotationConfigSeen] != "t0" || had["a_default"].Status.Phase != v1.PodRunning {
		t.Errorf("reconcile must take the status only: %s %+v", describe(ups), had["a_default"])
	}
}

// collect reads updates until want is seen (as describe strings, in
// order) or the deadline passes.
func collect(t *testing.T, ch <-chan Update, want ...string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	var got []string
	for len(got) < len(want) {
		select {
		case u, ok := <-ch:
			if !ok {
				t.Fatalf("stream closed after %q, want %q", got, want)
			}
			got = append(got, u.Source+"/"+describe([]Update{u}))
		case <-deadline:
			t.Fatalf("timed out after %q, want %q", got, want)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("updates %q, want %q", got, want)
	}
}

func runMerger(t *testing.T, sources ...string) (*Merger, context.CancelFunc) {
	t.Helper()
	m := NewMerger(sources...)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("merger did not stop")
		}
		if _, ok := <-m.Updates(); ok {
			t.Error("Updates not closed after Run returned")
		}
	})
	return m, cancel
}

func TestMergerSources(t *testing.T) {
	m, _ := runMerger(t, SourceFile, SourceHTTP)
	if m.Input("nope") != nil {
		t.Error("unknown source must have no input")
	}
	if m.SeenAllSources() {
		t.Fatal("seen before any set")
	}
	m.Input(SourceFile) <- Update{Op: OpSet, Pods: pods("b", "a")}
	collect(t, m.Updates(), "file/ADD:a,b")
	if m.SeenAllSources() {
		t.Fatal("seen all before the http source sent a set")
	}
	m.Input(SourceHTTP) <- Update{Op: OpSet}
	waitUntil(t, "all seen after an empty set", m.SeenAllSources)

	// Incremental input ops apply to the source's pods.
	m.Input(SourceHTTP) <- Update{Op: OpAdd, Pods: pods("h")}
	collect(t, m.Updates(), "http/ADD:h")
	m.Input(SourceHTTP) <- Update{Op: OpUpdate, Pods: pods("h+deleting")}
	collect(t, m.Updates(), "http/DELETE:h")
	m.Input(SourceHTTP) <- Update{Op: OpRemove, Pods: pods("h")}
	collect(t, m.Updates(), "http/REMOVE:h")

	// The same name in two sources is two pods.
	m.Input(SourceHTTP) <- Update{Op: OpSet, Pods: pods("a")}
	collect(t, m.Updates(), "http/ADD:a")
	var names []string
	for _, p := range m.Pods() {
		names = append(names, p.Annotations[podutil.AnnotationConfigSeen]+p.Name)
	}
	if got := strings.Join(names, ","); got != "t0a,t0b,t0a" {
		t.Errorf("merged pods %s", got)
	}
	// UIDs are those of Pods, without the copies.
	uids := m.UIDs()
	want := map[types.UID]bool{}
	for _, p := range m.Pods() {
		want[p.UID] = true
	}
	if !maps.Equal(uids, want) || len(want) == 0 {
		t.Errorf("UIDs %v, want those of Pods %v", uids, want)
	}
}

func TestMergerUpdatesAreCopies(t *testing.T) {
	m, _ := runMerger(t, SourceFile)
	in := pods("a")
	m.Input(SourceFile) <- Update{Op: OpSet, Pods: in}
	u := <-m.Updates()
	u.Pods[0].Labels = map[string]string{"mutated": "yes"}
	if in[0].Labels != nil || m.Pods()[0].Labels != nil {
		t.Error("a consumer's change reached the source or the merger")
	}
}

// TestMergerSlowConsumer: a source never waits for the consumer, and the
// sets it sends meanwhile coalesce into the latest.
func TestMergerSlowConsumer(t *testing.T) {
	m, _ := runMerger(t, SourceFile)
	in := m.Input(SourceFile)
	for i := range 1000 {
		select {
		case in <- Update{Op: OpSet, Pods: pods(fmt.Sprintf("p%d", i))}:
		case <-time.After(5 * time.Second):
			t.Fatalf("source blocked at set %d while nobody reads updates", i)
		}
	}
	// The first set may already be queued; everything between coalesces.
	deadline := time.After(10 * time.Second)
	var got []string
	for {
		select {
		case u := <-m.Updates():
			got = append(got, describe([]Update{u}))
			if u.Op == OpAdd && u.Pods[0].Name == "p999" {
				// Set i may be accepted only after set i+1 was sent, so a
				// few sets can show; 1000 must not.
				if len(got) > 10 {
					t.Errorf("sets did not coalesce: %d updates: %v", len(got), got)
				}
				return
			}
		case <-deadline:
			t.Fatalf("never got the last set: %v", got)
		}
	}
}

func TestMergerSeenWaitsForConsumer(t *testing.T) {
	m, _ := runMerger(t, SourceFile)
	m.Input(SourceFile) <- Update{Op: OpSet, Pods: pods("a")}
	time.Sleep(50 * time.Millisecond)
	if m.SeenAllSources() {
		t.Fatal("seen before the consumer took the first set's updates")
	}
	collect(t, m.Updates(), "file/ADD:a")
	waitUntil(t, "seen", m.SeenAllSources)
}

func TestMergerNoSources(t *testing.T) {
	m, _ := runMerger(t)
	if !m.SeenAllSources() {
		t.Error("no sources: all seen")
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestMergerClosedInput(t *testing.T) {
	m, _ := runMerger(t, SourceFile, SourceHTTP)
	close(m.Input(SourceFile))
	m.Input(SourceHTTP) <- Update{Op: OpSet, Pods: pods("a")}
	collect(t, m.Updates(), "http/ADD:a")
	if m.SeenAllSources() {
		t.Error("a source that closed its input without a set is not seen")
	}
}

// TestDiffIntoNamedOnly: an incremental diff compares the named pods only
// and changes the emitted pods in place.
func TestDiffIntoNamedOnly(t *testing.T) {
	t.Parallel()
	had := byName(pods("a+status=Pending", "c"))
	want := byName(pods("a+status=Running", "b"))
	ups := diffInto(SourceAPI, had, want, []string{"b_default", "c_default", "gone_default"})
	if got := describe(ups); got != "REMOVE:c ADD:b" {
		t.Errorf("updates %q, want REMOVE:c ADD:b (a not named: not compared)", got)
	}
	if len(had) != 2 || had["a_default"].Status.Phase != v1.PodPending || had["b_default"] == nil {
		t.Errorf("emitted after the diff: %v", had)
	}
}

// TestMergerIncrementalInput: incremental input ops give the same changes
// as full sets would, and a full set after them is diffed whole.
func TestMergerIncrementalInput(t *testing.T) {
	m, _ := runMerger(t, SourceAPI)
	in := m.Input(SourceAPI)
	in <- Update{Op: OpSet, Pods: pods("a", "b", "c")}
	collect(t, m.Updates(), "api/ADD:a,b,c")
	in <- Update{Op: OpAdd, Pods: pods("b+status=Running")}
	collect(t, m.Updates(), "api/RECONCILE:b")
	in <- Update{Op: OpAdd, Pods: pods("b+status=Running")}
	in <- Update{Op: OpAdd, Pods: pods("c:2")}
	collect(t, m.Updates(), "api/REMOVE:c", "api/ADD:c")
	in <- Update{Op: OpAdd, Pods: pods("a+deleting")}
	collect(t, m.Updates(), "api/DELETE:a")
	in <- Update{Op: OpRemove, Pods: pods("a", "never")}
	collect(t, m.Updates(), "api/REMOVE:a")
	in <- Update{Op: OpSet, Pods: pods("d")}
	collect(t, m.Updates(), "api/REMOVE:b,c", "api/ADD:d")
	var names []string
	for _, p := range m.Pods() {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, ","); got != "d" {
		t.Errorf("merged pods %s, want d", got)
	}
}
