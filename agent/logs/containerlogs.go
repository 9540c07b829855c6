package logs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	crilogs "k8s.io/cri-client/pkg/logs"
	"k8s.io/klog/v2"
)

// Prefix is the path of the endpoint: /containerLogs/{namespace}/{pod}/{container}.
const Prefix = "/containerLogs/"

// ServeHTTP serves GET /containerLogs/{namespace}/{pod}/{container} as
// kubelet does: 400 {"message": "Unable to decode query."}, 422
// {"message": "Invalid request."}, 404 for an unknown pod or container,
// 400 with the reason when no instance of the container has a log (not
// started yet, no previous one), else the log, flushed as it is read.
func (s Source) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "405: Method Not Allowed")
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, Prefix), "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		http.NotFound(w, r)
		return
	}
	ns, podName, container := parts[0], parts[1], parts[2]
	opts, err := ParseOptions(r.URL.Query())
	switch {
	case errors.Is(err, ErrDecode):
		writeError(w, http.StatusBadRequest, `{"message": "Unable to decode query."}`)
		return
	case err != nil:
		writeError(w, http.StatusUnprocessableEntity, `{"message": "Invalid request."}`)
		return
	}
	pod, status, ok := s.Pods.PodByName(ns, podName)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("pod %q does not exist", podName))
		return
	}
	if !hasContainer(pod, container) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("container %q not found in pod %q", container, podName))
		return
	}
	rs := s.runtime()
	if rs == nil {
		writeError(w, http.StatusServiceUnavailable, "container runtime not connected")
		return
	}
	ctx := r.Context()
	path, id, err := LogPath(ctx, rs, pod, status, container, opts.Previous)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	// A followed log is flushed line by line; otherwise it is written in
	// 64 KiB chunks (the reader writes line by line).
	fw := &flushWriter{w: w, rc: http.NewResponseController(w), flush: opts.Follow}
	if !opts.Follow {
		fw.buf = bufio.NewWriterSize(w, 64<<10)
	}
	var stdout, stderr io.Writer = fw, fw
	if opts.Stream != nil {
		switch *opts.Stream {
		case v1.LogStreamStdout:
			stderr = io.Discard
		case v1.LogStreamStderr:
			stdout = io.Discard
		}
	}
	w.Header().Set("Content-Type", "text/plain")
	err = readLog(ctx, path, id, CRIOptions(opts, now()), rs, stdout, stderr)
	if err != nil && !fw.wrote {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if fw.buf != nil {
		_ = fw.buf.Flush()
	}
	if err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).V(2).Info("Reading container log", "pod", klog.KRef(ns, podName), "container", container, "err", err)
	}
}

// readLog writes the log at path as o asks: the whole log through
// CopyLog, the rest (follow, tail, limits, since, timestamps, a log not
// in the CRI format) through k8s.io/cri-client's ReadLogs.
func readLog(ctx context.Context, path, id string, o *crilogs.LogOptions, rs internalapi.RuntimeService, stdout, stderr io.Writer) error {
	if plainRead(o) {
		if err := CopyLog(klog.FromContext(ctx), path, stdout, stderr); !errors.Is(err, errNotCRI) {
			return err
		}
	}
	return crilogs.ReadLogs(ctx, path, id, o, rs, stdout, stderr)
}

func (s Source) runtime() internalapi.RuntimeService {
	if s.Runtime == nil {
		return nil
	}
	return s.Runtime()
}

func hasContainer(pod *v1.Pod, name string) bool {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// LogPath finds the log file of container of pod as kubelet does: the
// container instance named by the pod's status (ContainerLogID), its log
// path from the runtime; and that instance's container ID. The errors are
// kubelet's texts.
func LogPath(ctx context.Context, rs internalapi.RuntimeService, pod *v1.Pod, status v1.PodStatus, container string, previous bool) (path, id string, err error) {
	ref, err := ContainerLogID(pod.Name, status, container, previous)
	if err != nil {
		return "", "", err
	}
	id = ref
	if _, after, ok := strings.Cut(ref, "://"); ok {
		id = after
	}
	st, err := rs.ContainerStatus(ctx, id, false)
	if err != nil {
		return "", "", fmt.Errorf("container %q status: %w", container, err)
	}
	if st.GetStatus().GetLogPath() == "" {
		return "", "", fmt.Errorf("container %q in pod %q has no log file", container, pod.Name)
	}
	return st.GetStatus().GetLogPath(), id, nil
}

// ContainerLogID is the container ("<runtime>://<id>") whose log a request
// for container of pod podName reads, from the pod's status as kubelet
// chooses it: with previous the last terminated instance; else the
// running one, else the terminated one, else the last terminated one;
// errors with kubelet's texts for a container with no status or none of
// these (waiting).
func ContainerLogID(podName string, status v1.PodStatus, container string, previous bool) (string, error) {
	var cs *v1.ContainerStatus
	for _, l := range [][]v1.ContainerStatus{status.ContainerStatuses, status.InitContainerStatuses, status.EphemeralContainerStatuses} {
		for i := range l {
			if cs == nil && l[i].Name == container {
				cs = &l[i]
			}
		}
	}
	if cs == nil {
		return "", fmt.Errorf("container %q in pod %q is not available", container, podName)
	}
	last, state := cs.LastTerminationState.Terminated, cs.State
	terminatedErr := fmt.Errorf("container %q in pod %q is terminated", container, podName)
	switch {
	case previous:
		if last == nil || last.ContainerID == "" {
			return "", fmt.Errorf("previous terminated container %q in pod %q not found", container, podName)
		}
		return last.ContainerID, nil
	case state.Running != nil:
		return cs.ContainerID, nil
	case state.Terminated != nil:
		switch {
		case state.Terminated.ContainerID != "":
			return state.Terminated.ContainerID, nil
		case last != nil && last.ContainerID != "":
			return last.ContainerID, nil
		}
		return "", terminatedErr
	case last != nil:
		if last.ContainerID == "" {
			return "", terminatedErr
		}
		return last.ContainerID, nil
	case state.Waiting != nil:
		reason := state.Waiting.Reason
		switch reason {
		case "ErrImagePull":
			reason = "image can't be pulled"
		case "ImagePullBackOff":
			reason = "trying and failing to pull image"
		}
		return "", fmt.Errorf("container %q in pod %q is waiting to start: %s", container, podName, reason)
	}
	return "", fmt.Errorf("container %q in pod %q is waiting to start - no logs yet", container, podName)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg)
}

// flushWriter (with flush) flushes after every write, so that a followed log reaches
// the client as it is written.
type flushWriter struct {
	w     io.Writer
	rc    *http.ResponseController
	flush bool
	wrote bool
	// buf, when set, collects the writes (flushed by the caller).
	buf *bufio.Writer
}

func (f *flushWriter) Write(p []byte) (int, error) {
	f.wrote = true
	if f.buf != nil {
		return f.buf.Write(p)
	}
	n, err := f.w.Write(p)
	if err != nil {
		return n, err
	}
	if f.flush {
		_ = f.rc.Flush()
	}
	return n, nil
}
