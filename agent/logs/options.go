package logs

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crilogs "k8s.io/cri-client/pkg/logs"
)

// Errors of ParseOptions, for errors.Is: kubelet answers the first with
// 400 and the second with 422.
var (
	ErrDecode  = errors.New("unable to decode query")
	ErrInvalid = errors.New("invalid request")
)

// ParseOptions reads kubelet's /containerLogs query parameters into
// PodLogOptions: follow, previous, timestamps (any value but "0", "f",
// "false" is true, as the API's query decoding has it), tailLines (or the
// legacy tail, "all" meaning every line), limitBytes, sinceSeconds,
// sinceTime (RFC 3339), stream (All, Stdout, Stderr); then validates them
// as the API does.
func ParseOptions(q url.Values) (v1.PodLogOptions, error) {
	var o v1.PodLogOptions
	if tail := q.Get("tail"); tail != "" {
		q = cloneValues(q)
		q.Set("tailLines", tail)
		if tail == "all" {
			q.Del("tailLines")
		}
	}
	o.Follow = boolParam(q, "follow")
	o.Previous = boolParam(q, "previous")
	o.Timestamps = boolParam(q, "timestamps")
	o.InsecureSkipTLSVerifyBackend = boolParam(q, "insecureSkipTLSVerifyBackend")
	var err error
	for name, dst := range map[string]**int64{"tailLines": &o.TailLines, "limitBytes": &o.LimitBytes, "sinceSeconds": &o.SinceSeconds} {
		if *dst, err = intParam(q, name); err != nil {
			return o, err
		}
	}
	if s := q.Get("sinceTime"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return o, fmt.Errorf("%w: sinceTime: %w", ErrDecode, err)
		}
		mt := metav1.NewTime(t)
		o.SinceTime = &mt
	}
	if s := q.Get("stream"); s != "" {
		o.Stream = &s
	}
	return o, Validate(o)
}

// Validate checks options as the API server does for pods/log.
func Validate(o v1.PodLogOptions) error {
	var errs []string
	if o.TailLines != nil && *o.TailLines < 0 {
		errs = append(errs, "tailLines: must be greater than or equal to 0")
	}
	if o.LimitBytes != nil && *o.LimitBytes < 1 {
		errs = append(errs, "limitBytes: must be greater than 0")
	}
	if o.SinceSeconds != nil && o.SinceTime != nil {
		errs = append(errs, "at most one of `sinceTime` or `sinceSeconds` may be specified")
	}
	if o.SinceSeconds != nil && *o.SinceSeconds < 1 {
		errs = append(errs, "sinceSeconds: must be greater than 0")
	}
	if o.Stream != nil {
		switch *o.Stream {
		case v1.LogStreamAll:
		case v1.LogStreamStdout, v1.LogStreamStderr:
			if o.TailLines != nil {
				errs = append(errs, "tailLines and specific stream are mutually exclusive for now")
			}
		default:
			errs = append(errs, fmt.Sprintf("stream: unsupported value %q: supported values: All, Stdout, Stderr", *o.Stream))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(errs, "; "))
	}
	return nil
}

// CRIOptions converts API options to the CRI log reader's, now being the
// time sinceSeconds counts back from; the later of sinceSeconds and
// sinceTime wins.
func CRIOptions(o v1.PodLogOptions, now time.Time) *crilogs.LogOptions {
	c := &crilogs.LogOptions{TailLines: o.TailLines, LimitBytes: o.LimitBytes, Follow: o.Follow, Timestamp: o.Timestamps}
	if o.SinceSeconds != nil {
		c.Since = now.Add(-time.Duration(*o.SinceSeconds) * time.Second)
	}
	if o.SinceTime != nil && o.SinceTime.After(c.Since) {
		c.Since = o.SinceTime.Time
	}
	return c
}

func boolParam(q url.Values, name string) bool {
	vs, ok := q[name]
	if !ok || len(vs) == 0 {
		return false
	}
	switch v := vs[0]; {
	case v == "0", strings.EqualFold(v, "f"), strings.EqualFold(v, "false"):
		return false
	}
	return true
}

func intParam(q url.Values, name string) (*int64, error) {
	s := q.Get(name)
	if s == "" {
		return nil, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrDecode, name, err)
	}
	return &v, nil
}

func cloneValues(q url.Values) url.Values {
	out := make(url.Values, len(q))
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}
