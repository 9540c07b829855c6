package sources

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// FileSource is the static manifest directory source (staticPodPath).
type FileSource struct {
	opts FileOptions
	staticSource

	// Owned by Run.
	files   map[string]*fileState
	skipped map[string]string
	missing bool
}

// fileState is what a manifest file gave at its current content.
type fileState struct {
	sum  [sha256.Size]byte
	pods []docPod // the last good pods: kept while the file is bad
	errs []docError
}

// NewFileSource returns the source of the manifests at opts.Path.
func NewFileSource(opts FileOptions) (*FileSource, error) {
	if opts.Path == "" {
		return nil, errors.New("file source: no path")
	}
	if opts.NodeName == "" {
		return nil, errors.New("file source: no node name")
	}
	if opts.Period <= 0 {
		opts.Period = DefaultCheckFrequency
	}
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.Path = filepath.Clean(opts.Path)
	return &FileSource{
		opts:         opts,
		staticSource: staticSource{problems: problemSet{source: SourceFile, now: opts.Now}},
		files:        map[string]*fileState{},
		skipped:      map[string]string{},
	}, nil
}

// Run scans the path, sends its pods, and sends them again whenever they
// change: on inotify events (debounced) and at every period, until ctx is
// done. Without inotify (disabled, unsupported, or the path missing) the
// periodic rescan alone notices changes. Run must not be called twice.
func (s *FileSource) Run(ctx context.Context, out chan<- Update) error {
	log := klog.FromContext(ctx).WithValues("source", SourceFile, "path", s.opts.Path)
	ctx = klog.NewContext(ctx, log)

	var w *watcher
	defer func() {
		if w != nil {
			_ = w.Close()
		}
	}()
	watchFailed := false
	watch := func() {
		if s.opts.DisableInotify || w != nil {
			return
		}
		dir := s.opts.Path
		if fi, err := os.Stat(dir); err != nil {
			return // checked again at the next period
		} else if !fi.IsDir() {
			dir = filepath.Dir(dir)
		}
		var err error
		w, err = newWatcher(dir)
		if err != nil {
			w = nil
			if !watchFailed {
				log.Info("Cannot watch static pod path; relying on the periodic rescan", "period", s.opts.Period, "err", err)
				watchFailed = true
			}
			return
		}
		watchFailed = false
		log.V(2).Info("Watching static pod path", "dir", dir)
	}

	// Watch before the first scan so no change falls between them.
	watch()
	if !s.rescan(ctx, out) {
		return nil
	}
	tick := time.NewTicker(s.opts.Period)
	defer tick.Stop()
	// The debounce timer: armed by the first event, shortened to
	// SettledDebounce when a file is complete.
	var (
		debounce <-chan time.Time
		due      time.Time
	)
	arm := func(d time.Duration) {
		if at := time.Now().Add(d); debounce == nil || at.Before(due) {
			debounce, due = time.After(d), at
		}
	}
	for {
		var events <-chan struct{}
		if w != nil {
			events = w.Events()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			watch()
			if !s.rescan(ctx, out) {
				return nil
			}
		case <-events:
			if err := w.Err(); err != nil {
				log.V(2).Info("Watch of static pod path ended; rescanning", "reason", err)
				_ = w.Close()
				w = nil
			}
			d := s.opts.Debounce
			if w != nil && w.Settled() {
				d = min(d, SettledDebounce)
			}
			arm(d)
		case <-debounce:
			debounce = nil
			watch()
			if !s.rescan(ctx, out) {
				return nil
			}
		}
	}
}

// rescan reads the path and sends the set when it changed (or was never
// sent); it returns false when ctx ended while sending.
func (s *FileSource) rescan(ctx context.Context, out chan<- Update) bool {
	results, probs, ok := s.scan(ctx)
	return s.publish(ctx, out, results, probs, ok)
}

// scan reads every manifest of the path in name order. ok is false when
// the set cannot be known (an unreadable directory): the last set stands.
func (s *FileSource) scan(ctx context.Context) (results []fileResult, probs []Problem, ok bool) {
	log := klog.FromContext(ctx)
	path := s.opts.Path
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		if !s.missing {
			log.Info("Static pod path does not exist; checking again every period", "period", s.opts.Period)
			s.missing = true
		}
		clear(s.files)
		clear(s.skipped)
		return nil, nil, true
	}
	if err != nil {
		return nil, []Problem{{File: path, Err: err}}, false
	}
	if s.missing {
		log.Info("Static pod path appeared")
		s.missing = false
	}

	var names []string
	switch {
	case fi.IsDir():
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, []Problem{{File: path, Err: err}}, false
		}
		for _, e := range entries {
			names = append(names, filepath.Join(path, e.Name()))
		}
	case fi.Mode().IsRegular():
		names = []string{path}
	default:
		return nil, []Problem{{File: path, Err: fmt.Errorf("not a directory or regular file (%s)", fi.Mode().Type())}}, false
	}

	files := make(map[string]*fileState, len(names))
	skipped := map[string]string{}
	for _, name := range names {
		st, skip, err := s.readManifest(ctx, name, path == name)
		switch {
		case skip != "":
			skipped[name] = skip
			if s.skipped[name] != skip {
				v := 0
				if strings.HasPrefix(filepath.Base(name), ".") {
					v = 2
				}
				log.V(v).Info("Skipping file in static pod path", "file", name, "reason", skip)
			}
			continue
		case err != nil:
			// Unreadable now: keep what the file gave before.
			probs = append(probs, Problem{File: name, Err: err})
			if prev := s.files[name]; prev != nil {
				files[name] = prev
				results = append(results, fileResult{file: name, pods: prev.pods})
			}
			continue
		}
		files[name] = st
		results = append(results, fileResult{file: name, pods: st.pods, errs: st.errs})
	}
	s.files, s.skipped = files, skipped
	return results, probs, true
}

// readManifest reads and decodes one file, reusing the last result when
// the content is unchanged. skip is why a directory entry is not a
// manifest; err is a read error.
func (s *FileSource) readManifest(ctx context.Context, name string, explicit bool) (_ *fileState, skip string, _ error) {
	if !explicit && strings.HasPrefix(filepath.Base(name), ".") {
		return nil, "hidden file", nil
	}
	if !explicit && strings.HasSuffix(name, "~") {
		// Editors leave the previous version there while saving; kubelet
		// would run it as a second pod.
		return nil, "editor backup file", nil
	}
	// Stat (following symlinks) before opening: opening a FIFO would block.
	fi, err := os.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "dangling symlink or removed while scanning", nil
	}
	if err != nil {
		return nil, "", err
	}
	switch {
	case fi.IsDir():
		return nil, "directory (not recursed into)", nil
	case !fi.Mode().IsRegular():
		return nil, "not a regular file", nil
	case fi.Size() > MaxManifestBytes:
		return nil, "", fmt.Errorf("larger than %d bytes", MaxManifestBytes)
	}
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "removed while scanning", nil
	}
	if err != nil {
		return nil, "", err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	_ = f.Close()
	if err != nil {
		return nil, "", err
	}
	if len(data) > MaxManifestBytes {
		return nil, "", fmt.Errorf("larger than %d bytes", MaxManifestBytes)
	}
	sum := sha256.Sum256(data)
	prev := s.files[name]
	if prev != nil && prev.sum == sum {
		return prev, "", nil
	}
	pods, errs, warns := staticPods(data, SourceFile, name, s.opts.NodeName, s.opts.Now())
	for _, w := range warns {
		klog.FromContext(ctx).Info("Ignoring field of static pod manifest", "file", name, "warning", w)
	}
	st := &fileState{sum: sum, pods: pods, errs: errs}
	if len(errs) > 0 {
		st.pods = nil
		if prev != nil {
			st.pods = prev.pods
		}
	}
	return st, "", nil
}
