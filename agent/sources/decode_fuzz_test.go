package sources

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzDecode: no input panics the decoder or the defaulting; every
// manifest is a pod or an error; a decoded pod re-encodes and decodes to
// the same UID (the hash input is stable).
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	more, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, name := range append(files, more...) {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, m := range Decode(data) {
			if (m.Pod == nil) == (m.Err == nil) {
				t.Fatalf("manifest must be a pod or an error: %+v", m)
			}
			if m.Err != nil {
				if !errors.Is(m.Err, ErrInvalidManifest) {
					t.Fatalf("error does not wrap ErrInvalidManifest: %v", m.Err)
				}
				continue
			}
			js, err := json.Marshal(m.Pod)
			if err != nil {
				t.Fatalf("re-encode: %v", err)
			}
			again := Decode(js)
			if len(again) != 1 || again[0].Err != nil {
				t.Fatalf("a decoded pod does not decode again: %s: %+v", js, again)
			}
			u1, err1 := StaticPodUID(SourceFile, "/m/f", node, m.Pod)
			u2, err2 := StaticPodUID(SourceFile, "/m/f", node, again[0].Pod)
			if err1 != nil || err2 != nil || u1 != u2 {
				t.Fatalf("uid not stable across a round trip: %s %s (%v %v)", u1, u2, err1, err2)
			}
			p, err := StaticPod(m.Pod, SourceFile, "/m/f", node, time.Unix(0, 0))
			if err == nil && (len(Validate(p)) != 0 || p.UID != u1) {
				t.Fatalf("a defaulted pod must be valid and carry its uid: %+v", p)
			}
		}
	})
}
