package gc

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func ctr(id string, uid types.UID, name string, ageMin int, running bool) Container {
	return Container{ID: id, SandboxID: "sb-" + string(uid), PodUID: uid, Name: name, Running: running,
		CreatedAt: t0.Add(-time.Duration(ageMin) * time.Minute)}
}

func ids(cs []Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.ID)
	}
	slices.Sort(out)
	return out
}

func sbIDs(sbs []Sandbox) []string {
	var out []string
	for _, s := range sbs {
		out = append(out, s.ID)
	}
	slices.Sort(out)
	return out
}

func states(m map[types.UID]PodState) PodStateFunc {
	return func(uid types.UID) PodState {
		if s, ok := m[uid]; ok {
			return s
		}
		return PodRemoved
	}
}

func TestSelectContainers(t *testing.T) {
	// Pod a crash-loops: one running container, four dead ones.
	crashLoop := []Container{
		ctr("a-run", "a", "app", 0, true),
		ctr("a-1", "a", "app", 1, false),
		ctr("a-2", "a", "app", 2, false),
		ctr("a-3", "a", "app", 3, false),
		ctr("a-4", "a", "app", 4, false),
	}
	cases := map[string]struct {
		ctrs    []Container
		sbs     []Sandbox
		pol     ContainerPolicy
		state   map[types.UID]PodState
		reclaim bool
		want    []string
		wantSbs []string
	}{
		"defaults keep the newest dead container": {
			ctrs: crashLoop, pol: DefaultContainerPolicy(), state: map[types.UID]PodState{"a": PodActive},
			want: []string{"a-2", "a-3", "a-4"},
		},
		"no per-container limit keeps all": {
			ctrs: crashLoop, pol: ContainerPolicy{MaxPerPodContainer: -1, MaxContainers: -1}, state: map[types.UID]PodState{"a": PodActive},
		},
		"max per container 2": {
			ctrs: crashLoop, pol: ContainerPolicy{MaxPerPodContainer: 2, MaxContainers: -1}, state: map[types.UID]PodState{"a": PodActive},
			want: []string{"a-3", "a-4"},
		},
		"zero per container still keeps the newest of a pod that exists": {
			ctrs: crashLoop, pol: ContainerPolicy{MaxPerPodContainer: 0, MaxContainers: -1}, state: map[types.UID]PodState{"a": PodActive},
			want: []string{"a-2", "a-3", "a-4"},
		},
		"min age protects young containers": {
			ctrs: crashLoop, pol: ContainerPolicy{MinAge: 150 * time.Second, MaxPerPodContainer: 1, MaxContainers: -1},
			state: map[types.UID]PodState{"a": PodActive},
			// a-1 is younger than MinAge and not evictable: a-3 is the newest evictable, kept.
			want: []string{"a-4"},
		},
		"removed pod loses every dead container, never a running one": {
			ctrs: crashLoop, pol: DefaultContainerPolicy(), state: map[types.UID]PodState{},
			want: []string{"a-1", "a-2", "a-3", "a-4"},
		},
		"finished pod keeps its newest in a periodic pass": {
			ctrs: []Container{ctr("f-1", "f", "app", 1, false), ctr("f-2", "f", "app", 2, false)},
			pol:  DefaultContainerPolicy(), state: map[types.UID]PodState{"f": PodFinished},
			want: []string{"f-2"},
		},
		"finished pod loses all under reclaim": {
			ctrs: []Container{ctr("f-1", "f", "app", 1, false), ctr("f-2", "f", "app", 2, false)},
			pol:  DefaultContainerPolicy(), state: map[types.UID]PodState{"f": PodFinished}, reclaim: true,
			want: []string{"f-1", "f-2"},
		},
		"a container being started keeps the previous dead one": {
			ctrs: []Container{
				{ID: "starting", PodUID: "a", Name: "app", Created: true, CreatedAt: t0.Add(-time.Second)},
				ctr("a-1", "a", "app", 1, false), ctr("a-2", "a", "app", 2, false),
				{ID: "never-started", PodUID: "b", Name: "app", Created: true, CreatedAt: t0.Add(-time.Hour)},
				ctr("b-1", "b", "app", 90, false),
			},
			pol: DefaultContainerPolicy(), state: map[types.UID]PodState{"a": PodActive, "b": PodActive},
			want: []string{"a-2", "b-1"},
		},
		"units are per container name": {
			ctrs: []Container{ctr("x-1", "p", "x", 1, false), ctr("x-2", "p", "x", 2, false), ctr("y-1", "p", "y", 3, false)},
			pol:  DefaultContainerPolicy(), state: map[types.UID]PodState{"p": PodActive},
			want: []string{"x-2"},
		},
		"max containers spreads over units, oldest first, newest of each stays": {
			ctrs: []Container{
				ctr("p-1", "p", "app", 1, false), ctr("p-2", "p", "app", 2, false), ctr("p-3", "p", "app", 3, false),
				ctr("q-1", "q", "app", 4, false), ctr("q-2", "q", "app", 5, false),
				ctr("r-1", "r", "app", 6, false),
			},
			pol:   ContainerPolicy{MaxPerPodContainer: -1, MaxContainers: 2},
			state: map[types.UID]PodState{"p": PodActive, "q": PodActive, "r": PodActive},
			// 3 units, limit 2: one per unit, and the newest of each stays.
			want: []string{"p-2", "p-3", "q-2"},
		},
		"max containers removes oldest beyond the per-unit share": {
			ctrs: []Container{
				ctr("p-1", "p", "app", 1, false), ctr("p-2", "p", "app", 2, false), ctr("p-3", "p", "app", 3, false),
				ctr("p-4", "p", "app", 4, false), ctr("q-1", "q", "app", 5, false),
			},
			pol:   ContainerPolicy{MaxPerPodContainer: -1, MaxContainers: 4},
			state: map[types.UID]PodState{"p": PodActive, "q": PodActive},
			want:  []string{"p-3", "p-4"},
		},
		"sandboxes: inactive ones go but the newest of an existing pod": {
			ctrs: []Container{ctr("a-1", "a", "app", 1, true)},
			sbs: []Sandbox{
				{ID: "sb-a", PodUID: "a", Ready: true, CreatedAt: t0.Add(-time.Minute)},
				{ID: "sb-a-old", PodUID: "a", CreatedAt: t0.Add(-time.Hour)},
				{ID: "sb-b-new", PodUID: "b", CreatedAt: t0.Add(-time.Minute)},
				{ID: "sb-b-old", PodUID: "b", CreatedAt: t0.Add(-time.Hour)},
				{ID: "sb-gone", PodUID: "gone", CreatedAt: t0.Add(-time.Hour)},
				{ID: "sb-gone-ready", PodUID: "gone2", Ready: true, CreatedAt: t0.Add(-time.Hour)},
			},
			pol:     DefaultContainerPolicy(),
			state:   map[types.UID]PodState{"a": PodActive, "b": PodFinished},
			wantSbs: []string{"sb-a-old", "sb-b-old", "sb-gone"},
		},
		"sandbox with a container left stays; emptied by this pass goes": {
			ctrs: []Container{ctr("g-1", "gone", "app", 1, false)},
			sbs:  []Sandbox{{ID: "sb-gone", PodUID: "gone", CreatedAt: t0.Add(-time.Hour)}, {ID: "sb-keep", PodUID: "k", CreatedAt: t0}},
			pol:  DefaultContainerPolicy(), state: map[types.UID]PodState{"k": PodActive},
			want: []string{"g-1"}, wantSbs: []string{"sb-gone"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sel := SelectContainers(tc.ctrs, tc.sbs, tc.pol, states(tc.state), t0, tc.reclaim)
			if got := ids(sel.Containers); !slices.Equal(got, tc.want) {
				t.Errorf("containers: got %v, want %v", got, tc.want)
			}
			if got := sbIDs(sel.Sandboxes); !slices.Equal(got, tc.wantSbs) {
				t.Errorf("sandboxes: got %v, want %v", got, tc.wantSbs)
			}
		})
	}
}

func TestPodLogDirUID(t *testing.T) {
	for in, want := range map[string]types.UID{"default_web_1234": "1234", "ns_name": "", "a__b": "", "x_y_z_w": ""} {
		got, ok := PodLogDirUID(in)
		if got != want || ok != (want != "") {
			t.Errorf("%q: got %q %v, want %q", in, got, ok, want)
		}
	}
}
