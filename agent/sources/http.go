package sources

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/internal/podutil"
)

// URLSource is the static pod URL source (staticPodURL).
type URLSource struct {
	opts   URLOptions
	client *http.Client
	staticSource

	// Owned by Run.
	last fileResult
}

// NewURLSource returns the source of the pods served at opts.URL.
func NewURLSource(opts URLOptions) (*URLSource, error) {
	u, err := url.Parse(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("url source: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("url source: %q is not an http(s) URL", opts.URL)
	}
	if opts.NodeName == "" {
		return nil, errors.New("url source: no node name")
	}
	if opts.Period <= 0 {
		opts.Period = DefaultCheckFrequency
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultHTTPTimeout
	}
	opts.Timeout = min(opts.Timeout, opts.Period)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Transport == nil {
		opts.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	return &URLSource{
		opts:         opts,
		client:       &http.Client{Transport: opts.Transport},
		staticSource: staticSource{problems: problemSet{source: SourceHTTP, now: opts.Now}},
		last:         fileResult{file: opts.URL},
	}, nil
}

// Run fetches the URL now and every period until ctx is done, sending the
// pods whenever they change. A failed fetch or an unusable body keeps the
// last good set and is a Problem until a fetch succeeds; nothing is sent
// before the first good fetch.
func (s *URLSource) Run(ctx context.Context, out chan<- Update) error {
	log := klog.FromContext(ctx).WithValues("source", SourceHTTP, "url", s.opts.URL)
	ctx = klog.NewContext(ctx, log)
	defer s.client.CloseIdleConnections()
	tick := time.NewTicker(s.opts.Period)
	defer tick.Stop()
	for {
		if !s.poll(ctx, out) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// poll fetches once; it returns false when ctx ended.
func (s *URLSource) poll(ctx context.Context, out chan<- Update) bool {
	data, err := s.fetch(ctx)
	if ctx.Err() != nil {
		return false
	}
	var probs []Problem
	good := false
	if err != nil {
		probs = []Problem{{File: s.opts.URL, Err: err}}
	} else {
		pods, errs, warns := staticPods(data, SourceHTTP, s.opts.URL, s.opts.NodeName, s.opts.Now())
		for _, w := range warns {
			klog.FromContext(ctx).V(2).Info("Ignoring field of static pod manifest", "warning", w)
		}
		for _, e := range errs {
			probs = append(probs, Problem{File: s.opts.URL, Doc: e.doc, Err: e.err})
		}
		if len(errs) == 0 {
			s.last.pods, good = s.keepSeen(pods), true
		}
	}
	// Not good: the last good set stands (none yet: nothing sent).
	return s.publish(ctx, out, []fileResult{s.last}, probs, good)
}

// keepSeen gives pods unchanged since the last fetch their first seen
// time back, so an unchanged body gives identical pods.
func (s *URLSource) keepSeen(pods []docPod) []docPod {
	prev := map[string]string{}
	for _, dp := range s.last.pods {
		prev[string(dp.pod.UID)] = dp.pod.Annotations[podutil.AnnotationConfigSeen]
	}
	for _, dp := range pods {
		if t, ok := prev[string(dp.pod.UID)]; ok {
			dp.pod.Annotations[podutil.AnnotationConfigSeen] = t
		}
	}
	return pods
}

func (s *URLSource) fetch(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.opts.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFetch, err)
	}
	for k, vs := range s.opts.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFetch, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, fmt.Errorf("%w: %s", ErrFetch, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read body: %w", ErrFetch, err)
	}
	if len(data) > MaxManifestBytes {
		return nil, fmt.Errorf("%w: body larger than %d bytes", ErrFetch, MaxManifestBytes)
	}
	return data, nil
}
