package logs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apitest "k8s.io/cri-api/pkg/apis/testing"
	crilogs "k8s.io/cri-client/pkg/logs"
	"k8s.io/klog/v2"
)

// CopyLog writes what k8s.io/cri-client's ReadLogs writes without options,
// on hand-made edge cases and on random logs (partial lines, both streams,
// malformed lines, lines longer than the read buffer, an unterminated last
// line).
func TestCopyLogMatchesReadLogs(t *testing.T) {
	cases := map[string]string{
		"empty": "",
		"plain": "2026-11-25T05:00:00.000000000Z stdout F one\n2026-11-25T05:00:01Z stderr F two\n",
		"partial joined": "2026-11-25T05:00:00.1Z stdout P par\n2026-11-25T05:00:00.2Z stdout F tial\n" +
			"2026-11-25T05:00:00.3Z stderr P \n2026-11-25T05:00:00.4Z stderr F x\n",
		"extra tags": "2026-11-25T05:00:00Z stdout F:x:y tagged\n2026-11-25T05:00:00Z stdout P:x cut\n",
		"malformed skipped": "2026-11-25T05:00:00Z stdout F ok\nnot a line\n2026-11-25T05:00:00Z stdin F bad stream\n" +
			"yesterday stdout F bad time\n2026-11-25T05:00:00Z stdout\n2026-11-25T05:00:00Z stdout F fine\n",
		"unterminated":  "2026-11-25T05:00:00Z stdout F one\n2026-11-25T05:00:01Z stdout F no newline",
		"empty content": "2026-11-25T05:00:00Z stdout F \n2026-11-25T05:00:00Z stdout F\n",
		"long line":     "2026-11-25T05:00:00Z stdout F " + strings.Repeat("x", 200<<10) + "\n2026-11-25T05:00:01Z stderr F after\n",
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range 20 {
		var b strings.Builder
		for range rnd.IntN(400) {
			stream := []string{"stdout", "stderr"}[rnd.IntN(2)]
			tag := []string{"F", "P", "F:x"}[rnd.IntN(3)]
			content := strings.Repeat(string(rune('a'+rnd.IntN(26))), rnd.IntN(300))
			switch rnd.IntN(40) {
			case 0:
				fmt.Fprintf(&b, "garbage %s\n", content)
			case 1:
				fmt.Fprintf(&b, "2026-11-25T05:00:00Z %s %s", stream, tag) // no content delimiter
				b.WriteString("\n")
			default:
				fmt.Fprintf(&b, "2026-11-25T05:%02d:%02d.%dZ %s %s %s\n", rnd.IntN(60), rnd.IntN(60), rnd.IntN(1e9), stream, tag, content)
			}
		}
		s := b.String()
		if rnd.IntN(2) == 0 && len(s) > 0 {
			s = strings.TrimSuffix(s, "\n")
		}
		cases[fmt.Sprintf("random %d", i)] = "2026-11-25T05:00:00Z stdout F first\n" + s
	}
	dir := t.TempDir()
	rs := apitest.NewFakeRuntimeService()
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".log")
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			var wantOut, wantErr, gotOut, gotErr bytes.Buffer
			werr := crilogs.ReadLogs(context.Background(), path, "", &crilogs.LogOptions{}, rs, &wantOut, &wantErr)
			gerr := CopyLog(klog.Background(), path, &gotOut, &gotErr)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("errors: ReadLogs %v, CopyLog %v", werr, gerr)
			}
			if gotOut.String() != wantOut.String() || gotErr.String() != wantErr.String() {
				t.Errorf("stdout %d bytes, stderr %d; ReadLogs wrote %d, %d\nstdout %.200q\nwant   %.200q",
					gotOut.Len(), gotErr.Len(), wantOut.Len(), wantErr.Len(), gotOut.String(), wantOut.String())
			}
		})
	}
}

// A log in Docker's JSON format is left to ReadLogs, nothing written.
func TestCopyLogNotCRI(t *testing.T) {
	path := filepath.Join(t.TempDir(), "json.log")
	if err := os.WriteFile(path, []byte(`{"log":"hi\n","stream":"stdout","time":"2026-11-25T05:00:00Z"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := CopyLog(klog.Background(), path, &out, &out); !errors.Is(err, errNotCRI) || out.Len() != 0 {
		t.Errorf("CopyLog = %v, wrote %q; want errNotCRI and nothing", err, out.String())
	}
	out.Reset()
	if err := readLog(context.Background(), path, "", &crilogs.LogOptions{}, apitest.NewFakeRuntimeService(), &out, &out); err != nil || out.String() != "hi\n" {
		t.Errorf("readLog = %v, %q; want ReadLogs' answer", err, out.String())
	}
}
