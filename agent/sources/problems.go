package sources

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/internal/podutil"
)

// docPod is a valid static pod and the document it came from.
type docPod struct {
	doc int
	pod *v1.Pod
}

// docError is an unusable document (0: the file as a whole).
type docError struct {
	doc int
	err error
}

// staticPods decodes data (one manifest file or HTTP body), defaults and
// validates every pod in it. A body without any document is an error: to
// say "no pods" a source must send an empty PodList or remove the file.
func staticPods(data []byte, source, identity, nodeName string, seen time.Time) ([]docPod, []docError, []string) {
	var (
		pods  []docPod
		errs  []docError
		warns []string
	)
	ms, docs := decode(data)
	if docs == 0 {
		return nil, []docError{{0, invalid("no manifest in it (to run no pods, delete the file or send an empty PodList)")}}, nil
	}
	for _, m := range ms {
		for _, w := range m.Warnings {
			warns = append(warns, fmt.Sprintf("document %d: %s", m.Doc, w))
		}
		if m.Err != nil {
			errs = append(errs, docError{m.Doc, m.Err})
			continue
		}
		p, err := StaticPod(m.Pod, source, identity, nodeName, seen)
		if err != nil {
			if m.Item >= 0 {
				err = fmt.Errorf("items[%d]: %w", m.Item, err)
			}
			errs = append(errs, docError{m.Doc, err})
			continue
		}
		pods = append(pods, docPod{m.Doc, p})
	}
	return pods, errs, warns
}

// dedupe keeps the first pod of every full name, in the order given, and
// reports the others naming both places.
func dedupe(files []fileResult) ([]*v1.Pod, []Problem) {
	type origin struct {
		file string
		doc  int
	}
	first := map[string]origin{}
	var (
		pods  []*v1.Pod
		probs []Problem
	)
	for _, f := range files {
		for _, dp := range f.pods {
			fn := FullName(dp.pod)
			if o, dup := first[fn]; dup {
				where := o.file
				if o.file == f.file {
					where = "this file"
				}
				probs = append(probs, Problem{File: f.file, Doc: dp.doc,
					Err: fmt.Errorf("%w %s: already defined in %s (document %d)", ErrDuplicatePod, fn, where, o.doc)})
				continue
			}
			first[fn] = origin{f.file, dp.doc}
			pods = append(pods, dp.pod)
		}
		for _, e := range f.errs {
			probs = append(probs, Problem{File: f.file, Doc: e.doc, Err: e.err})
		}
	}
	return pods, probs
}

// fileResult is what one file (or body) contributes to a set.
type fileResult struct {
	file string
	pods []docPod
	errs []docError
}

// staticSource is what the file and the URL source share: their name
// (SourceFile, SourceHTTP) and their problems.
type staticSource struct {
	problems problemSet
	// Owned by Run: whether a set was sent, and its keys.
	sent     bool
	lastKeys []string
}

// publish sets the source's problems (probs and the duplicates among
// results) and, when ok, sends the pods of results unless the same set
// was sent last; false when ctx ended while sending.
func (s *staticSource) publish(ctx context.Context, out chan<- Update, results []fileResult, probs []Problem, ok bool) bool {
	pods, dups := dedupe(results)
	s.problems.set(ctx, append(probs, dups...))
	if !ok {
		return true
	}
	keys := setKeys(pods)
	if s.sent && slices.Equal(keys, s.lastKeys) {
		return true
	}
	if !send(ctx, out, s.problems.source, pods) {
		return false
	}
	s.sent, s.lastKeys = true, keys
	return true
}

// Name is the source's name.
func (s *staticSource) Name() string { return s.problems.source }

// Problems are the current problems of the source, oldest first.
func (s *staticSource) Problems() []Problem { return s.problems.get() }

// problemSet holds the current problems of a source, keeping the time each
// was first seen, and logs each when it appears and when it goes.
type problemSet struct {
	source string
	now    func() time.Time

	mu  sync.Mutex
	cur []Problem
}

func problemKey(p Problem) string {
	return fmt.Sprintf("%s\x00%d\x00%v", p.File, p.Doc, p.Err)
}

func (ps *problemSet) set(ctx context.Context, next []Problem) {
	log := klog.FromContext(ctx)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	old := map[string]Problem{}
	for _, p := range ps.cur {
		old[problemKey(p)] = p
	}
	out := make([]Problem, 0, len(next))
	now := ps.now()
	for _, p := range next {
		p.Source = ps.source
		k := problemKey(p)
		if o, ok := old[k]; ok {
			p.Time = o.Time
			delete(old, k)
		} else {
			p.Time = now
			log.Error(p.Err, "Pod source problem", "source", p.Source, "file", p.File, "doc", p.Doc)
		}
		out = append(out, p)
	}
	for _, p := range old {
		log.Info("Pod source problem resolved", "source", p.Source, "file", p.File, "doc", p.Doc, "problem", p.Err.Error())
	}
	slices.SortStableFunc(out, func(a, b Problem) int {
		return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.File, b.File), cmp.Compare(a.Doc, b.Doc))
	})
	ps.cur = out
}

func (ps *problemSet) get() []Problem {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return slices.Clone(ps.cur)
}

// setKeys identifies a set of pods by full name, UID and a digest of the
// content (a manifest may fix its UID and still change).
func setKeys(pods []*v1.Pod) []string {
	keys := make([]string, len(pods))
	for i, p := range pods {
		keys[i] = FullName(p) + "/" + string(p.UID) + "/" + contentDigest(p)
	}
	slices.Sort(keys)
	return keys
}

// contentDigest hashes the pod as its worker sees it: everything but the
// config.seen time.
func contentDigest(p *v1.Pod) string {
	c := p.DeepCopy()
	delete(c.Annotations, podutil.AnnotationConfigSeen)
	b, err := json.Marshal(c)
	if err != nil {
		return "?"
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// send delivers a set, or gives up when ctx is done.
func send(ctx context.Context, out chan<- Update, source string, pods []*v1.Pod) bool {
	return deliver(ctx, out, Update{Op: OpSet, Source: source, Pods: pods})
}
