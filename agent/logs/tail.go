package logs

import (
	"context"

	crilogs "k8s.io/cri-client/pkg/logs"
)

// Tail is the content of the last lines of the CRI log file at path
// (partial lines joined, both streams), at most maxBytes from its end;
// "" when it cannot be read. It is what a terminated container's message
// falls back to (FallbackToLogsOnError).
func Tail(path string, lines int64, maxBytes int) string {
	buf := &tailBuffer{max: maxBytes}
	opts := &crilogs.LogOptions{TailLines: &lines}
	// Without Follow the reader needs no runtime service.
	if err := crilogs.ReadLogs(context.Background(), path, "", opts, nil, buf, buf); err != nil && len(buf.b) == 0 {
		return ""
	}
	return string(buf.b)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	b   []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= t.max {
		t.b = append(t.b[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if over := len(t.b) + len(p) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	t.b = append(t.b, p...)
	return n, nil
}
