package runtime

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/agent/logs"
)

// Kubelet's limits for the message of a terminated container.
const (
	// MaxTerminationMessageBytes is how much of the termination-message
	// file is read (its end).
	MaxTerminationMessageBytes = 4 << 10
	// MaxTerminationLogLines and MaxTerminationLogBytes bound the log tail
	// used under FallbackToLogsOnError.
	MaxTerminationLogLines = 80
	MaxTerminationLogBytes = 2 << 10
)

// TerminationMessage is the message of an exited container as kubelet
// builds it: the end of the file mounted at the container's
// terminationMessagePath (found among the CRI status's mounts); when that
// is empty or absent and the policy is FallbackToLogsOnError and the exit
// code is not 0 (and the container ran: reason not ContainerCannotRun),
// the tail of the container's log.
func TerminationMessage(s *runtimeapi.ContainerStatus, path string, policy v1.TerminationMessagePolicy) string {
	// A container that could not run has no logs to fall back to.
	fallback := policy == v1.TerminationMessageFallbackToLogsOnError && s.GetExitCode() != 0 && s.GetReason() != "ContainerCannotRun"
	if path != "" {
		for _, m := range s.GetMounts() {
			if filepath.Clean(m.GetContainerPath()) != filepath.Clean(path) {
				continue
			}
			data, err := readTail(m.GetHostPath(), MaxTerminationMessageBytes)
			switch {
			case errors.Is(err, os.ErrNotExist):
			case err != nil:
				return fmt.Sprintf("Error on reading termination log %s: %v", m.GetHostPath(), err)
			case len(data) > 0:
				return string(data)
			}
			break
		}
	}
	if !fallback || s.GetLogPath() == "" {
		return ""
	}
	return logTail(s.GetLogPath(), MaxTerminationLogLines, MaxTerminationLogBytes)
}

// readTail reads at most max bytes from the end of the file at path.
func readTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if off := fi.Size() - max; off > 0 {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, max))
}

// logTail is the content of the last lines of a CRI log file, at most
// maxBytes from its end (logs.Tail: the CRI log reader /containerLogs uses).
func logTail(path string, maxLines int, maxBytes int) string {
	return logs.Tail(path, int64(maxLines), maxBytes)
}
