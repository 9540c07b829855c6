package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestTerminationMessage(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	msgFile := write("msg", "disk full\n")
	empty := write("empty", "")
	big := write("big", strings.Repeat("x", 5000)+"END")
	var log strings.Builder
	for i := range 100 {
		fmt.Fprintf(&log, "2026-11-22T20:00:00.%09dZ stdout F line %d\n", i, i)
	}
	log.WriteString("2026-11-22T20:00:01.000000000Z stderr P partial \n2026-11-22T20:00:01.000000001Z stderr F end\n")
	logFile := write("0.log", log.String())
	status := func(exit int32, host string) *runtimeapi.ContainerStatus {
		s := &runtimeapi.ContainerStatus{ExitCode: exit, LogPath: logFile}
		if host != "" {
			s.Mounts = []*runtimeapi.Mount{{ContainerPath: "/dev/termination-log", HostPath: host}}
		}
		return s
	}
	const path = "/dev/termination-log"
	file, fallback := v1.TerminationMessageReadFile, v1.TerminationMessageFallbackToLogsOnError
	for name, tc := range map[string]struct {
		s      *runtimeapi.ContainerStatus
		path   string
		policy v1.TerminationMessagePolicy
		want   func(string) bool
	}{
		"file":                         {status(1, msgFile), path, file, func(m string) bool { return m == "disk full\n" }},
		"file wins over logs":          {status(1, msgFile), path, fallback, func(m string) bool { return m == "disk full\n" }},
		"empty file, policy File":      {status(1, empty), path, file, func(m string) bool { return m == "" }},
		"empty file, fallback, exit 0": {status(0, empty), path, fallback, func(m string) bool { return m == "" }},
		// The tail counts log records, as kubelet's CRI log reader does:
		// the partial record and its end are two of the 80.
		"empty file, fallback, exit 1": {status(1, empty), path, fallback, func(m string) bool {
			return strings.HasSuffix(m, "line 99\npartial end\n") && strings.Count(m, "\n") == MaxTerminationLogLines-1 && !strings.Contains(m, "line 21\n")
		}},
		"no mount, fallback":    {status(2, ""), path, fallback, func(m string) bool { return strings.HasSuffix(m, "partial end\n") }},
		"missing file":          {status(1, filepath.Join(dir, "gone")), path, file, func(m string) bool { return m == "" }},
		"the end of a big file": {status(1, big), path, file, func(m string) bool { return len(m) == MaxTerminationMessageBytes && strings.HasSuffix(m, "END") }},
		"no path":               {status(1, msgFile), "", file, func(m string) bool { return m == "" }},
		"could not run":         {func() *runtimeapi.ContainerStatus { s := status(128, ""); s.Reason = "ContainerCannotRun"; return s }(), path, fallback, func(m string) bool { return m == "" }},
	} {
		t.Run(name, func(t *testing.T) {
			if got := TerminationMessage(tc.s, tc.path, tc.policy); !tc.want(got) {
				t.Errorf("message %q", got)
			}
		})
	}
	if got := logTail(logFile, 80, 20); len(got) != 20 || !strings.HasSuffix(got, "partial end\n") {
		t.Errorf("byte-bounded tail %q", got)
	}
}
