package sources

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/internal/podutil"
)

// Merger merges the pod sets of several sources into one ordered stream
// of changes.
//
// Every source has its own input channel. The Merger takes from it at
// once and only records the source's wanted pods, so a source never waits
// on a slow consumer: while the consumer is busy, successive sets of a
// source coalesce into the latest. When the consumer is ready, the Merger
// diffs the source's wanted pods against what it last emitted for that
// source and emits, in this order, OpRemove, OpAdd, OpUpdate, OpDelete and
// OpReconcile, each with its pods sorted by full name, skipping empty
// ones. Sources with pending changes are served in the order they changed.
type Merger struct {
	inputs map[string]chan Update
	out    chan Update
	wake   chan struct{}

	mu      sync.Mutex
	state   map[string]*sourceState
	pending []string // sources with changes not yet emitted, oldest first
}

type sourceState struct {
	want    map[string]*v1.Pod // by full name, as the source last said
	emitted map[string]*v1.Pod // as last emitted
	// changed are the full names of the pods of incremental updates since
	// the last diff, which compares only those unless a full set came
	// (all): a source that sends one pod's change costs one pod's diff.
	changed map[string]struct{}
	all     bool
	gotSet  bool // a full set arrived
	seen    bool // the first set is delivered
	pending bool
}

// NewMerger returns a merger of the named sources. SeenAllSources is true
// once each of them has delivered its first set.
func NewMerger(sources ...string) *Merger {
	m := &Merger{
		inputs: map[string]chan Update{},
		out:    make(chan Update),
		wake:   make(chan struct{}, 1),
		state:  map[string]*sourceState{},
	}
	for _, s := range sources {
		m.inputs[s] = make(chan Update)
		m.state[s] = &sourceState{want: map[string]*v1.Pod{}, emitted: map[string]*v1.Pod{}, changed: map[string]struct{}{}}
	}
	return m
}

// Input is the channel of one source, nil for a source the merger was not
// made with. Update.Source is ignored. OpSet replaces the source's pods;
// OpAdd, OpUpdate, OpDelete and OpReconcile add or replace the pods given;
// OpRemove removes them. The merger does not change the pods sent, and
// the sender must not change them afterwards either. A send blocks only
// until Run takes it, which it does without waiting for the consumer.
func (m *Merger) Input(source string) chan<- Update {
	if ch, ok := m.inputs[source]; ok {
		return ch
	}
	return nil
}

// Updates is the merged stream, closed when Run returns.
func (m *Merger) Updates() <-chan Update { return m.out }

// SeenAllSources reports whether every source has delivered its first
// full set: it was received and all the updates it caused were taken
// from Updates.
func (m *Merger) SeenAllSources() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, st := range m.state {
		if !st.seen {
			return false
		}
	}
	return true
}

// Pods are the pods of every source as of the last changes computed (the
// newest may still wait in Updates), sorted by source and full name.
func (m *Merger) Pods() []*v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*v1.Pod
	for _, src := range slices.Sorted(maps.Keys(m.state)) {
		out = append(out, copySorted(slices.Collect(maps.Values(m.state[src].emitted)))...)
	}
	return out
}

// UIDs are the UIDs of Pods, without copying a pod: what housekeeping
// and the garbage collector ask every few seconds.
func (m *Merger) UIDs() map[types.UID]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, st := range m.state {
		n += len(st.emitted)
	}
	out := make(map[types.UID]bool, n)
	for _, st := range m.state {
		for _, p := range st.emitted {
			out[p.UID] = true
		}
	}
	return out
}

// Run takes the sources' updates and emits the merged changes until ctx
// is done, then closes Updates. Run must be called once.
func (m *Merger) Run(ctx context.Context) {
	log := klog.FromContext(ctx)
	var wg sync.WaitGroup
	defer close(m.out)
	defer wg.Wait()
	for src, ch := range m.inputs {
		wg.Go(func() {
			for {
				select {
				case u, ok := <-ch:
					if !ok {
						return // the source is done
					}
					m.accept(ctx, src, u)
				case <-ctx.Done():
					return
				}
			}
		})
	}

	var (
		queue    []Update
		firstSet string // the source whose first set is in queue
	)
	for {
		if len(queue) == 0 {
			if firstSet != "" {
				m.markSeen(ctx, firstSet)
				firstSet = ""
			}
			queue, firstSet = m.next()
			if len(queue) == 0 && firstSet != "" {
				continue
			}
		}
		if len(queue) == 0 {
			select {
			case <-m.wake:
			case <-ctx.Done():
				return
			}
			continue
		}
		select {
		case m.out <- queue[0]:
			log.V(4).Info("Pod update", "op", queue[0].Op, "source", queue[0].Source, "pods", len(queue[0].Pods))
			queue = queue[1:]
		case <-ctx.Done():
			return
		}
	}
}

func (m *Merger) accept(ctx context.Context, src string, u Update) {
	m.mu.Lock()
	st := m.state[src]
	switch u.Op {
	case OpSet:
		st.want = map[string]*v1.Pod{}
		st.gotSet, st.all = true, true
		clear(st.changed)
		for _, p := range u.Pods {
			fn := FullName(p)
			if _, dup := st.want[fn]; dup {
				klog.FromContext(ctx).Info("Ignoring duplicate pod in a set", "source", src, "pod", fn)
				continue
			}
			st.want[fn] = p
		}
	case OpRemove:
		for _, p := range u.Pods {
			fn := FullName(p)
			delete(st.want, fn)
			st.changed[fn] = struct{}{}
		}
	default:
		for _, p := range u.Pods {
			fn := FullName(p)
			st.want[fn] = p
			st.changed[fn] = struct{}{}
		}
	}
	if !st.pending {
		st.pending = true
		m.pending = append(m.pending, src)
	}
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *Merger) markSeen(ctx context.Context, src string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if st := m.state[src]; !st.seen {
		st.seen = true
		klog.FromContext(ctx).V(2).Info("Pod source seen", "source", src)
	}
}

// next diffs the oldest pending source; firstSet names it when the diff
// delivers its first full set.
func (m *Merger) next() (_ []Update, firstSet string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.pending) == 0 {
		return nil, ""
	}
	src := m.pending[0]
	m.pending = m.pending[1:]
	st := m.state[src]
	st.pending = false
	var ups []Update
	if st.all {
		ups, st.emitted = Diff(src, st.emitted, st.want)
	} else {
		ups = diffInto(src, st.emitted, st.want, slices.Collect(maps.Keys(st.changed)))
	}
	st.all = false
	clear(st.changed)
	if st.gotSet && !st.seen {
		firstSet = src
	}
	return ups, firstSet
}

// Diff compares the pods a source wants (by full name) with those it had
// and returns the updates that turn one into the other, in the Merger's
// order, and the source's pods after them: an unchanged pod keeps its old
// object (and so its first config.seen time); a reconciled one takes the
// new status only. The pods of the updates are copies.
func Diff(source string, had, want map[string]*v1.Pod) ([]Update, map[string]*v1.Pod) {
	next := make(map[string]*v1.Pod, len(want))
	maps.Copy(next, had)
	names := slices.Collect(maps.Keys(had))
	for fn := range want {
		if _, ok := had[fn]; !ok {
			names = append(names, fn)
		}
	}
	return diffInto(source, next, want, names), next
}

// diffInto is Diff of the pods named only: it changes had (the source's
// pods as emitted) into the pods after the updates it returns.
func diffInto(source string, had, want map[string]*v1.Pod, names []string) []Update {
	var removes, adds, updates, deletes, reconciles []*v1.Pod
	for _, fn := range names {
		o, was := had[fn]
		n, ok := want[fn]
		switch {
		case !ok:
			if was {
				removes = append(removes, o)
				delete(had, fn)
			}
		case !was:
			adds = append(adds, n)
			had[fn] = n
		case o.UID != n.UID:
			// Another pod under the same name (an edited static manifest,
			// a deleted and re-created API pod): the old one goes, the new
			// one comes — pods are identified by UID, as in kubelet.
			removes = append(removes, o)
			adds = append(adds, n)
			had[fn] = n
		case podsDiffer(o, n):
			if n.DeletionTimestamp != nil {
				deletes = append(deletes, n)
			} else {
				updates = append(updates, n)
			}
			had[fn] = n
		case !equality.Semantic.DeepEqual(o.Status, n.Status):
			c := o.DeepCopy()
			n.Status.DeepCopyInto(&c.Status)
			reconciles = append(reconciles, c)
			had[fn] = c
		}
	}
	var ups []Update
	for _, u := range []struct {
		op   Op
		pods []*v1.Pod
	}{{OpRemove, removes}, {OpAdd, adds}, {OpUpdate, updates}, {OpDelete, deletes}, {OpReconcile, reconciles}} {
		if len(u.pods) > 0 {
			ups = append(ups, Update{Op: u.op, Source: source, Pods: copySorted(u.pods)})
		}
	}
	return ups
}

// podsDiffer reports a change the pod's worker must act on: UID, spec,
// labels, annotations (but config.seen) or deletion.
func podsDiffer(a, b *v1.Pod) bool {
	return a.UID != b.UID ||
		!equality.Semantic.DeepEqual(a.Spec, b.Spec) ||
		!equality.Semantic.DeepEqual(a.Labels, b.Labels) ||
		!equality.Semantic.DeepEqual(withoutSeen(a.Annotations), withoutSeen(b.Annotations)) ||
		!equality.Semantic.DeepEqual(a.DeletionTimestamp, b.DeletionTimestamp) ||
		!equality.Semantic.DeepEqual(a.DeletionGracePeriodSeconds, b.DeletionGracePeriodSeconds)
}

func withoutSeen(a map[string]string) map[string]string {
	if _, ok := a[podutil.AnnotationConfigSeen]; !ok {
		return a
	}
	c := maps.Clone(a)
	delete(c, podutil.AnnotationConfigSeen)
	return c
}

func copySorted(pods []*v1.Pod) []*v1.Pod {
	out := make([]*v1.Pod, len(pods))
	for i, p := range pods {
		out[i] = p.DeepCopy()
	}
	slices.SortFunc(out, func(a, b *v1.Pod) int { return cmp.Compare(FullName(a), FullName(b)) })
	return out
}
