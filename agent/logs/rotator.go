package logs

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// Rotator rotates the logs of running containers: every Interval it looks
// at each running container's log and applies PlanRotation, with at most
// Workers containers at a time. Rotation renames the log and asks the
// runtime to reopen it (CRI ReopenContainerLog); a failed reopen renames
// it back.
//
// Where kubelet only looks every containerLogMonitorInterval (so that a
// fast writer's rotated file can be many times containerLogMaxSize),
// kernelet also reacts to the writes: an inotify watch of LogsDir reports
// the live logs written (at most once per MinGap, writes coalescing in the
// kernel meanwhile), and those over the size are rotated at once. A rotated
// file then holds containerLogMaxSize plus what the container writes during
// one MinGap and one rotation (a stat, a rename, a CRI call). Without
// inotify, the known logs' sizes are polled every SizeCheck instead.
type Rotator struct {
	Runtime  internalapi.RuntimeService
	Policy   Policy
	Interval time.Duration
	Workers  int
	// LogsDir is the pod logs directory (<LogsDir>/<pod>/<container>/<n>.log)
	// watched for writes; "" : no watch.
	LogsDir string
	// MinGap is the least time between two looks at written logs
	// (0: DefaultMinGap).
	MinGap time.Duration
	// SizeCheck is how often the known logs' sizes are checked between
	// full passes when the watch is unavailable (0: only the full passes).
	SizeCheck time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	// paths are the running containers' log paths by container id.
	paths map[string]string
	// failed are the logs whose rotation failed since the last full pass:
	// writes to them wait for that pass (no CRI calls on every write).
	failed map[string]bool
}

// DefaultMinGap is the Rotator's default MinGap: a writer of 5 MiB/s adds
// about 100 KiB per gap to a rotated file.
const DefaultMinGap = 20 * time.Millisecond

// Run rotates until ctx is done.
func (r *Rotator) Run(ctx context.Context) {
	t := time.NewTicker(r.Interval)
	defer t.Stop()
	w := r.watch(ctx)
	if w != nil {
		defer w.Close()
	}
	var changed <-chan struct{}
	var fast <-chan time.Time
	if w != nil {
		changed = w.Changed()
	} else if r.SizeCheck > 0 {
		ft := time.NewTicker(r.SizeCheck)
		defer ft.Stop()
		fast = ft.C
	}
	for {
		if err := r.Once(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Container log rotation")
		}
		for full := false; !full; {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				full = true
			case <-fast:
				r.checkSizes(ctx, nil)
			case <-changed:
				if err := w.Err(); err != nil {
					klog.FromContext(ctx).Error(err, "Container log watch ended; polling log sizes", "every", r.SizeCheck)
					changed = nil
					if r.SizeCheck > 0 {
						ft := time.NewTicker(r.SizeCheck)
						defer ft.Stop()
						fast = ft.C
					}
					continue
				}
				paths, all := w.Take()
				r.written(ctx, paths, all)
			}
		}
	}
}

// written checks the logs the watch reports written (paths), or every
// log when it lost events (all). None is no check: the watch also reports
// the directories made for each new pod and container, and a check of
// every log costs a CRI list and a status per new container.
func (r *Rotator) written(ctx context.Context, paths []string, all bool) {
	switch {
	case all:
		r.checkSizes(ctx, nil)
	case len(paths) > 0:
		r.checkSizes(ctx, paths)
	}
}

// watch starts the inotify watch of LogsDir, nil when there is none.
func (r *Rotator) watch(ctx context.Context) *logWatch {
	if r.LogsDir == "" {
		return nil
	}
	gap := r.MinGap
	if gap <= 0 {
		gap = DefaultMinGap
	}
	if err := os.MkdirAll(r.LogsDir, 0o755); err != nil {
		klog.FromContext(ctx).Error(err, "Container log watch off; polling log sizes", "every", r.SizeCheck)
		return nil
	}
	w, err := newLogWatch(r.LogsDir, gap)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Container log watch off; polling log sizes", "every", r.SizeCheck)
		return nil
	}
	return w
}

// checkSizes rotates the logs at paths (nil: every running container's)
// that are over the size now. A log path not known from the last pass is
// looked up once among the running containers; a log no running container
// writes, or whose rotation fails (it stopped, say), is left to the next
// full pass.
func (r *Rotator) checkSizes(ctx context.Context, paths []string) {
	if r.paths == nil {
		r.paths = map[string]string{}
	}
	over := map[string]string{} // path → container id ("" unknown)
	ids := map[string]string{}
	for id, p := range r.paths {
		ids[p] = id
	}
	if paths == nil {
		for id, p := range r.paths {
			over[p] = id
		}
		r.learnRunning(ctx, ids, over, true)
	} else {
		for _, p := range paths {
			if !r.failed[p] {
				over[p] = ids[p]
			}
		}
	}
	unknown := false
	for p := range over {
		if fi, err := os.Stat(p); err != nil || fi.Size() <= r.Policy.MaxSize {
			delete(over, p)
		} else if over[p] == "" {
			unknown = true
		}
	}
	if unknown && paths != nil {
		r.learnRunning(ctx, ids, over, false)
	}
	fail := func(p string) {
		if r.failed == nil {
			r.failed = map[string]bool{}
		}
		r.failed[p] = true
	}
	for p, id := range over {
		if id == "" { // no running container writes it
			fail(p)
			continue
		}
		if err := r.rotate(ctx, id, p); err != nil {
			delete(r.paths, id)
			fail(p)
			if ctx.Err() == nil {
				klog.FromContext(ctx).V(2).Info("Container log rotation", "containerID", id, "err", err)
			}
		}
	}
}

// learnRunning adds the running containers not in r.paths yet (their log
// paths asked from the runtime) to r.paths, and to over where over has
// their path, or every one when all (the check of every log).
func (r *Rotator) learnRunning(ctx context.Context, ids, over map[string]string, all bool) {
	list, err := r.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	})
	if err != nil {
		return
	}
	for _, c := range list {
		if _, ok := r.paths[c.Id]; ok {
			continue
		}
		p, err := r.logPath(ctx, c.Id)
		if err != nil || p == "" {
			continue
		}
		r.paths[c.Id] = p
		ids[p] = c.Id
		if _, ok := over[p]; ok || all {
			over[p] = c.Id
		}
	}
}

// Once looks at every running container's log once.
func (r *Rotator) Once(ctx context.Context) error {
	list, err := r.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	})
	if err != nil {
		return fmt.Errorf("list running containers: %w", err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(r.Workers, 1))
	errs := make([]error, len(list))
	paths := make([]string, len(list))
	for i, c := range list {
		g.Go(func() error {
			paths[i], errs[i] = r.logPath(gctx, c.Id)
			if errs[i] == nil && paths[i] != "" {
				errs[i] = r.rotate(gctx, c.Id, paths[i])
			}
			return nil
		})
	}
	_ = g.Wait()
	r.paths, r.failed = map[string]string{}, nil
	for i, c := range list {
		if paths[i] != "" {
			r.paths[c.Id] = paths[i]
		}
	}
	return errors.Join(errs...)
}

func (r *Rotator) logPath(ctx context.Context, id string) (string, error) {
	st, err := r.Runtime.ContainerStatus(ctx, id, false)
	if err != nil {
		return "", fmt.Errorf("container %s: %w", id, err)
	}
	return st.GetStatus().GetLogPath(), nil
}

// rotate applies the plan for container id's log at path.
func (r *Rotator) rotate(ctx context.Context, id, path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		// The runtime may not have written anything yet; a running
		// container's log that vanished is reopened.
		if errors.Is(err, os.ErrNotExist) {
			return r.reopen(ctx, id)
		}
		return fmt.Errorf("container %s log: %w", id, err)
	}
	others, err := filepath.Glob(globEscape(path) + ".*")
	if err != nil {
		return fmt.Errorf("container %s log: %w", id, err)
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	plan := PlanRotation(path, fi.Size(), others, r.Policy, now())
	return r.apply(ctx, id, path, plan)
}

// apply carries out plan for container id's log at path.
func (r *Rotator) apply(ctx context.Context, id, path string, plan Plan) error {
	var errs []error
	for _, f := range plan.Remove {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	for _, f := range plan.Compress {
		if err := compress(f); err != nil {
			errs = append(errs, err)
		}
	}
	if plan.RotateTo == "" {
		return errors.Join(errs...)
	}
	if err := os.Rename(path, plan.RotateTo); err != nil {
		return errors.Join(append(errs, fmt.Errorf("rotate %s: %w", path, err))...)
	}
	if err := r.reopen(ctx, id); err != nil {
		// Put the log back: the runtime still writes to it.
		if rerr := os.Rename(plan.RotateTo, path); rerr != nil {
			err = errors.Join(err, fmt.Errorf("roll back %s: %w", path, rerr))
		}
		return errors.Join(append(errs, err)...)
	}
	klog.FromContext(ctx).V(4).Info("Rotated container log", "containerID", id, "rotated", plan.RotateTo)
	return errors.Join(errs...)
}

func (r *Rotator) reopen(ctx context.Context, id string) error {
	if err := r.Runtime.ReopenContainerLog(ctx, id); err != nil {
		return fmt.Errorf("reopen log of container %s: %w", id, err)
	}
	return nil
}

// compress gzips f into f.gz (through f.gz.tmp) and removes f.
func compress(f string) (err error) {
	in, err := os.Open(f)
	if err != nil {
		return fmt.Errorf("compress %s: %w", f, err)
	}
	defer in.Close()
	tmp := f + CompressedSuffix + TempSuffix
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return fmt.Errorf("compress %s: %w", f, err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	zw := gzip.NewWriter(out)
	if _, err := io.Copy(zw, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("compress %s: %w", f, err)
	}
	if err := errors.Join(zw.Close(), out.Close()); err != nil {
		return fmt.Errorf("compress %s: %w", f, err)
	}
	if err := os.Rename(tmp, f+CompressedSuffix); err != nil {
		return fmt.Errorf("compress %s: %w", f, err)
	}
	if err := os.Remove(f); err != nil {
		return fmt.Errorf("compress %s: %w", f, err)
	}
	return nil
}

// globEscape escapes the glob metacharacters of a path.
func globEscape(p string) string {
	var b []byte
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '*', '?', '[', '\\':
			b = append(b, '\\')
		}
		b = append(b, p[i])
	}
	return string(b)
}
