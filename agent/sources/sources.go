package sources

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// Sources are running sources merged into one stream.
type Sources struct {
	merger  *Merger
	sources []Source
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu   sync.Mutex
	errs []error
}

// OptionsFromKubelet takes the static source settings of a (defaulted)
// KubeletConfiguration.
func OptionsFromKubelet(kc *kubeletv1beta1.KubeletConfiguration, nodeName string) Options {
	return Options{
		NodeName:           nodeName,
		StaticPodPath:      kc.StaticPodPath,
		FileCheckFrequency: kc.FileCheckFrequency.Duration,
		StaticPodURL:       kc.StaticPodURL,
		StaticPodURLHeader: kc.StaticPodURLHeader,
		HTTPCheckFrequency: kc.HTTPCheckFrequency.Duration,
	}
}

// Start runs the static sources opts enables, and the extra ones (the API
// server source, say), merged, until ctx is done or Close.
func Start(ctx context.Context, opts Options, extra ...Source) (*Sources, error) {
	var srcs []Source
	add := func(s Source, err error) error {
		if err == nil {
			srcs = append(srcs, s)
		}
		return err
	}
	if opts.StaticPodPath != "" {
		if err := add(NewFileSource(FileOptions{Path: opts.StaticPodPath, NodeName: opts.NodeName,
			Period: opts.FileCheckFrequency, DisableInotify: opts.DisableInotify})); err != nil {
			return nil, err
		}
	}
	if opts.StaticPodURL != "" {
		if err := add(NewURLSource(URLOptions{URL: opts.StaticPodURL, Header: opts.StaticPodURLHeader,
			NodeName: opts.NodeName, Period: opts.HTTPCheckFrequency})); err != nil {
			return nil, err
		}
	}
	srcs = append(srcs, extra...)
	var names []string
	for _, s := range srcs {
		if slices.Contains(names, s.Name()) {
			return nil, fmt.Errorf("two sources named %q", s.Name())
		}
		names = append(names, s.Name())
	}

	ctx, cancel := context.WithCancel(ctx)
	s := &Sources{merger: NewMerger(names...), sources: srcs, cancel: cancel}
	s.wg.Go(func() { s.merger.Run(ctx) })
	for _, src := range srcs {
		s.wg.Go(func() {
			if err := src.Run(ctx, s.merger.Input(src.Name())); err != nil {
				s.mu.Lock()
				s.errs = append(s.errs, fmt.Errorf("%s source: %w", src.Name(), err))
				s.mu.Unlock()
			}
		})
	}
	return s, nil
}

// Updates is the merged stream, closed once the sources stopped.
func (s *Sources) Updates() <-chan Update { return s.merger.Updates() }

// SeenAllSources reports whether every source has delivered its first set.
func (s *Sources) SeenAllSources() bool { return s.merger.SeenAllSources() }

// Pods are the pods of every source, see Merger.Pods.
func (s *Sources) Pods() []*v1.Pod { return s.merger.Pods() }

// UIDs are the UIDs of Pods, see Merger.UIDs.
func (s *Sources) UIDs() map[types.UID]bool { return s.merger.UIDs() }

// Problems are the current problems of every source, oldest first.
func (s *Sources) Problems() []Problem {
	var out []Problem
	for _, src := range s.sources {
		out = append(out, src.Problems()...)
	}
	slices.SortStableFunc(out, func(a, b Problem) int {
		return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.Source, b.Source), cmp.Compare(a.File, b.File), cmp.Compare(a.Doc, b.Doc))
	})
	return out
}

// Close stops every source and the merger and waits for them; it returns
// what the sources failed with.
func (s *Sources) Close() error {
	s.cancel()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.errs...)
}
