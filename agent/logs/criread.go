package logs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	crilogs "k8s.io/cri-client/pkg/logs"
	"k8s.io/klog/v2"
)

// errNotCRI is a log whose first line is not in the CRI format (left to
// k8s.io/cri-client's reader, which also reads Docker's JSON lines).
var errNotCRI = errors.New("not a CRI log")

// plainRead tells whether o asks for the whole log as it is (no follow,
// tail, byte limit, since or timestamps): what CopyLog serves.
func plainRead(o *crilogs.LogOptions) bool {
	return !o.Follow && o.TailLines == nil && o.LimitBytes == nil && o.Since.IsZero() && !o.Timestamp
}

// CopyLog writes the content of the CRI log at path (each line's stdout
// part to stdout, stderr part to stderr, partial lines joined) as
// k8s.io/cri-client's ReadLogs does without options, reading 64 KiB at a
// time and parsing lines in place: no allocation per line. Lines that do
// not parse are skipped (and logged) as ReadLogs skips them; a log whose
// first line is not CRI is errNotCRI, nothing written.
func CopyLog(log klog.Logger, path string, stdout, stderr io.Writer) error {
	evaluated, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("failed to try resolving symlinks in path %q: %v", path, err)
	}
	f, err := os.Open(evaluated)
	if err != nil {
		return fmt.Errorf("failed to open log file %q: %v", evaluated, err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var long []byte // a line longer than the buffer, assembled
	first := true
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("failed to read log file %q: %v", evaluated, err)
		}
		if len(line) > 0 {
			stream, content, perr := parseCRILine(line)
			switch {
			case perr != nil && first:
				return errNotCRI
			case perr != nil:
				log.Error(perr, "Failed when parsing line in log file", "path", evaluated, "line", line)
			default:
				w := stdout
				if stream == streamStderr {
					w = stderr
				}
				if _, werr := w.Write(content); werr != nil {
					return werr
				}
			}
			first = false
		}
		if err != nil { // io.EOF: an unterminated last line was written above
			return nil
		}
	}
}

type logStream int

const (
	streamStdout logStream = iota
	streamStderr
)

// parseCRILine splits one CRI log line ("<RFC 3339 time> <stdout|stderr>
// <tag>[:<tags>] <content>") into its stream and content: the content
// keeps its newline unless the tag is P (partial), as cri-client's parser
// does.
func parseCRILine(l []byte) (logStream, []byte, error) {
	ts, rest, ok := bytes.Cut(l, []byte{' '})
	if !ok {
		return 0, nil, errors.New("timestamp is not found")
	}
	if _, err := time.Parse(crilogs.RFC3339NanoLenient, string(ts)); err != nil {
		return 0, nil, fmt.Errorf("unexpected timestamp format %q: %v", crilogs.RFC3339NanoLenient, err)
	}
	st, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return 0, nil, errors.New("stream type is not found")
	}
	var stream logStream
	switch string(st) {
	case "stdout":
	case "stderr":
		stream = streamStderr
	default:
		return 0, nil, fmt.Errorf("unexpected stream type %q", st)
	}
	tags, content, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return 0, nil, errors.New("log tag is not found")
	}
	if tag, _, _ := bytes.Cut(tags, []byte{':'}); string(tag) == "P" && len(content) > 0 && content[len(content)-1] == '\n' {
		content = content[:len(content)-1]
	}
	return stream, content, nil
}
