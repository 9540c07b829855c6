package sources

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"
)

func manifest(name, image string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\nspec:\n  containers:\n  - name: c\n    image: " + image + "\n"
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeAtomic writes like editors and config tools do: a hidden temporary
// file renamed over the target.
func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	writeFile(t, tmp, content)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

type harness struct {
	src *FileSource
	m   *Merger
}

// startFile runs a directory source into a merger until the test ends.
func startFile(t *testing.T, opts FileOptions) *harness {
	t.Helper()
	opts.NodeName = node
	src, err := NewFileSource(opts)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMerger(SourceFile)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	mergerDone, srcDone := make(chan struct{}), make(chan error, 1)
	go func() {
		defer close(mergerDone)
		m.Run(ctx)
	}()
	go func() { srcDone <- src.Run(ctx, m.Input(SourceFile)) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-mergerDone:
		case <-time.After(5 * time.Second):
			t.Error("merger did not stop")
		}
		select {
		case err := <-srcDone:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("file source did not stop")
		}
	})
	return &harness{src: src, m: m}
}

// expectNone fails when an update arrives within d.
func expectNone(t *testing.T, ch <-chan Update, d time.Duration) {
	t.Helper()
	select {
	case u := <-ch:
		t.Fatalf("unexpected update %s/%s", u.Source, describe([]Update{u}))
	case <-time.After(d):
	}
}

func (h *harness) waitProblem(t *testing.T, file, contains string) Problem {
	t.Helper()
	var found Problem
	waitUntil(t, "a problem with "+file+" containing "+contains, func() bool {
		for _, p := range h.src.Problems() {
			if p.File == file && strings.Contains(p.Err.Error(), contains) {
				found = p
				return true
			}
		}
		return false
	})
	return found
}

func TestFileSourceInotify(t *testing.T) {
	dir := t.TempDir()
	// An hour between rescans: only inotify can deliver the changes in time.
	h := startFile(t, FileOptions{Path: dir, Period: time.Hour})
	waitUntil(t, "the first (empty) set", h.m.SeenAllSources)

	a := filepath.Join(dir, "a.yaml")
	writeFile(t, a, manifest("a", "nginx:1"))
	collect(t, h.m.Updates(), "file/ADD:a-node-1")

	writeFile(t, a, manifest("a", "nginx:2"))
	collect(t, h.m.Updates(), "file/REMOVE:a-node-1", "file/ADD:a-node-1") // new content, new UID

	// A malformed manifest among good ones: the good ones are delivered and
	// the problem names the bad file.
	bad := filepath.Join(dir, "b-bad.yaml")
	writeFile(t, bad, "apiVersion: v1\nkind: Pod\nmetadata: [\n")
	writeFile(t, filepath.Join(dir, "c.json"), `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"c"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`)
	collect(t, h.m.Updates(), "file/ADD:c-node-1")
	p := h.waitProblem(t, bad, "invalid manifest")
	if p.Source != SourceFile || p.Doc != 1 || p.Time.IsZero() || !strings.Contains(p.String(), bad) {
		t.Errorf("problem %+v (%s)", p, p)
	}

	// Editors write a temporary file and rename it over the target.
	writeAtomic(t, filepath.Join(dir, "d.yaml"), manifest("d", "busybox"))
	collect(t, h.m.Updates(), "file/ADD:d-node-1")

	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	collect(t, h.m.Updates(), "file/REMOVE:a-node-1")

	if err := os.Remove(bad); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the problem to clear", func() bool { return len(h.src.Problems()) == 0 })
	expectNone(t, h.m.Updates(), 200*time.Millisecond)
}

// A file that is complete (renamed in, closed after writing, removed) is
// read at once; a file still being written waits for the debounce or its
// close.
func TestFileSourceSettledSkipsDebounce(t *testing.T) {
	dir := t.TempDir()
	h := startFile(t, FileOptions{Path: dir, Period: time.Hour, Debounce: time.Hour})
	waitUntil(t, "the first (empty) set", h.m.SeenAllSources)

	writeAtomic(t, filepath.Join(dir, "a.yaml"), manifest("a", "nginx:1"))
	collect(t, h.m.Updates(), "file/ADD:a-node-1")

	f, err := os.Create(filepath.Join(dir, "b.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(manifest("b", "nginx:1")); err != nil {
		t.Fatal(err)
	}
	expectNone(t, h.m.Updates(), 300*time.Millisecond) // still open: not settled
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	collect(t, h.m.Updates(), "file/ADD:b-node-1")

	// A removal is not settled (an editor may be saving): it waits for
	// the debounce.
	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	expectNone(t, h.m.Updates(), 300*time.Millisecond)
}

// An editor that saves by renaming the file to a "~" backup, writing the
// new file and deleting the backup never makes the backup a pod, and the
// new content arrives as soon as the new file is closed.
func TestFileSourceEditorSave(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), manifest("a", "nginx:1"))
	h := startFile(t, FileOptions{Path: dir, Period: time.Hour, Debounce: time.Hour})
	collect(t, h.m.Updates(), "file/ADD:a-node-1")
	if err := os.Rename(filepath.Join(dir, "a.yaml"), filepath.Join(dir, "a.yaml~")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the editor writing
	writeFile(t, filepath.Join(dir, "a.yaml"), manifest("a", "nginx:2"))
	collect(t, h.m.Updates(), "file/REMOVE:a-node-1", "file/ADD:a-node-1") // new content, new UID
	if err := os.Remove(filepath.Join(dir, "a.yaml~")); err != nil {
		t.Fatal(err)
	}
	expectNone(t, h.m.Updates(), 200*time.Millisecond)
}

// A manifest that fixes its UID and changes is still delivered (as an
// UPDATE: same UID).
func TestFileSourceFixedUIDEdit(t *testing.T) {
	dir := t.TempDir()
	fixed := func(image string) string {
		return strings.Replace(manifest("a", image), "metadata:\n", "metadata:\n  uid: fixed-uid-1\n", 1)
	}
	writeFile(t, filepath.Join(dir, "a.yaml"), fixed("nginx:1"))
	h := startFile(t, FileOptions{Path: dir, Period: time.Hour})
	collect(t, h.m.Updates(), "file/ADD:a-node-1")
	writeFile(t, filepath.Join(dir, "a.yaml"), fixed("nginx:2"))
	collect(t, h.m.Updates(), "file/UPDATE:a-node-1")
}

func TestFileSourceRescanWithoutInotify(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), manifest("a", "nginx:1"))
	h := startFile(t, FileOptions{Path: dir, Period: 20 * time.Millisecond, DisableInotify: true})
	collect(t, h.m.Updates(), "file/ADD:a-node-1")
	writeFile(t, filepath.Join(dir, "a.yaml"), manifest("a", "nginx:2"))
	collect(t, h.m.Updates(), "file/REMOVE:a-node-1", "file/ADD:a-node-1") // new content, new UID
	writeFile(t, filepath.Join(dir, "b.yaml"), manifest("b", "nginx:2"))
	collect(t, h.m.Updates(), "file/ADD:b-node-1")
	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	collect(t, h.m.Updates(), "file/REMOVE:a-node-1")
}

// TestFileSourceBadFileKeepsLastGood pins the chosen behaviour: a file
// that turns bad keeps its last good pods (kubelet would remove them).
func TestFileSourceBadFileKeepsLastGood(t *testing.T) {
	for _, inotify := range []bool{true, false} {
		t.Run(map[bool]string{true: "inotify", false: "rescan"}[inotify], func(t *testing.T) {
			dir := t.TempDir()
			a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
			writeFile(t, a, manifest("a", "nginx:1")+"---\n"+manifest("a2", "nginx:1"))
			writeFile(t, b, manifest("b", "nginx:1"))
			h := startFile(t, FileOptions{Path: dir, Period: 30 * time.Millisecond, DisableInotify: !inotify})
			collect(t, h.m.Updates(), "file/ADD:a-node-1,a2-node-1,b-node-1")

			tests := []struct {
				name, content, problem string
			}{
				{"malformed", "apiVersion: v1\nkind: Pod\nmetadata: [\n", "invalid manifest"},
				{"wrong kind", "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n", `unsupported Service "v1"`},
				{"invalid field", manifest("a", `""`), "spec.containers[0].image: Required value"},
				{"one bad document", manifest("a", "nginx:9") + "---\napiVersion: v1\n", "kind is missing"},
				{"empty", "", "no manifest in it"},
				{"comments only", "# emptied\n", "no manifest in it"},
			}
			for _, tc := range tests {
				writeFile(t, a, tc.content)
				h.waitProblem(t, a, tc.problem)
				expectNone(t, h.m.Updates(), 100*time.Millisecond)
				if got := len(h.m.Pods()); got != 3 {
					t.Fatalf("%s: %d pods, want the 3 last good", tc.name, got)
				}
			}

			writeFile(t, a, manifest("a", "nginx:2"))
			collect(t, h.m.Updates(), "file/REMOVE:a-node-1,a2-node-1", "file/ADD:a-node-1")
			waitUntil(t, "the problem to clear", func() bool { return len(h.src.Problems()) == 0 })

			// A file that was never good adds nothing and takes nothing.
			c := filepath.Join(dir, "c.yaml")
			writeFile(t, c, "kind: [")
			h.waitProblem(t, c, "invalid manifest")
			expectNone(t, h.m.Updates(), 100*time.Millisecond)

			// A deleted bad file takes its last good pods with it.
			writeFile(t, a, "bad: [")
			h.waitProblem(t, a, "invalid manifest")
			if err := os.Remove(a); err != nil {
				t.Fatal(err)
			}
			collect(t, h.m.Updates(), "file/REMOVE:a-node-1")
		})
	}
}

func TestFileSourceDuplicates(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	writeFile(t, b, manifest("web", "nginx:from-b")+"---\n"+manifest("other", "nginx"))
	writeFile(t, a, manifest("web", "nginx:from-a")+"---\n"+manifest("web", "nginx:again"))
	h := startFile(t, FileOptions{Path: dir, Period: time.Hour})
	collect(t, h.m.Updates(), "file/ADD:other-node-1,web-node-1")
	pods := h.m.Pods()
	if img := pods[1].Spec.Containers[0].Image; img != "nginx:from-a" {
		t.Errorf("the first file by name must win, got image %s", img)
	}
	pb := h.waitProblem(t, b, "duplicate pod web-node-1_default: already defined in "+a+" (document 1)")
	pa := h.waitProblem(t, a, "duplicate pod web-node-1_default: already defined in this file (document 1)")
	if pb.Doc != 1 || pa.Doc != 2 || !errors.Is(pb.Err, ErrDuplicatePod) {
		t.Errorf("problems %+v %+v", pb, pa)
	}
	// Removing the winner lets the other definition in.
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	collect(t, h.m.Updates(), "file/REMOVE:web-node-1", "file/ADD:web-node-1")
	waitUntil(t, "problems to clear", func() bool { return len(h.src.Problems()) == 0 })
}

func TestFileSourceSkipsHiddenAndDirectories(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".hidden.yaml"), manifest("hidden", "nginx"))
	writeFile(t, filepath.Join(dir, ".swp"), "binary junk [")
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "sub.yaml", "inner.yaml"), manifest("inner", "nginx"))
	// Any other regular file is a manifest, whatever its name (as kubelet).
	writeFile(t, filepath.Join(dir, "pod.txt"), manifest("txt", "nginx"))
	// Symlinks are followed; dangling ones are skipped.
	writeFile(t, filepath.Join(dir, "sub.yaml", "target"), manifest("linked", "nginx"))
	if err := os.Symlink(filepath.Join(dir, "sub.yaml", "target"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	h := startFile(t, FileOptions{Path: dir, Period: time.Hour})
	collect(t, h.m.Updates(), "file/ADD:linked-node-1,txt-node-1")
	if ps := h.src.Problems(); len(ps) != 0 {
		t.Errorf("problems: %v", ps)
	}
}

func TestFileSourceMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	h := startFile(t, FileOptions{Path: dir, Period: 30 * time.Millisecond})
	// A missing directory is an empty set: the source is seen.
	waitUntil(t, "the empty set", h.m.SeenAllSources)
	if ps := h.src.Problems(); len(ps) != 0 {
		t.Errorf("a missing directory is no problem: %v", ps)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "a.yaml"), manifest("a", "nginx"))
	collect(t, h.m.Updates(), "file/ADD:a-node-1")
	// Once the directory exists it is watched again; removing it removes
	// its pods.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	collect(t, h.m.Updates(), "file/REMOVE:a-node-1")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "b.yaml"), manifest("b", "nginx"))
	collect(t, h.m.Updates(), "file/ADD:b-node-1")
}

func TestFileSourceSingleFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".pod.yaml") // named explicitly: read even if hidden
	writeFile(t, path, manifest("single", "nginx:1"))
	writeFile(t, filepath.Join(dir, "other.yaml"), manifest("other", "nginx"))
	h := startFile(t, FileOptions{Path: path, Period: time.Hour})
	collect(t, h.m.Updates(), "file/ADD:single-node-1")
	writeAtomic(t, path, manifest("single", "nginx:2"))
	collect(t, h.m.Updates(), "file/REMOVE:single-node-1", "file/ADD:single-node-1")
}

// TestFileSourceUIDStable: two source instances (an agent restart) give
// the same UIDs; a changed manifest or another path gives new ones.
func TestFileSourceUIDStable(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.yaml")
	writeFile(t, a, manifest("a", "nginx:1"))
	uids := func(path string) map[string]string {
		t.Helper()
		src, err := NewFileSource(FileOptions{Path: path, NodeName: node, DisableInotify: true})
		if err != nil {
			t.Fatal(err)
		}
		out := make(chan Update, 1)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = src.Run(ctx, out)
		}()
		u := <-out
		cancel()
		<-done
		m := map[string]string{}
		for _, p := range u.Pods {
			m[p.Name] = string(p.UID)
		}
		return m
	}
	first, second := uids(dir), uids(dir)
	if first["a-node-1"] == "" || first["a-node-1"] != second["a-node-1"] {
		t.Errorf("restart changed the UID: %v %v", first, second)
	}
	writeFile(t, a, manifest("a", "nginx:2"))
	if changed := uids(dir); changed["a-node-1"] == first["a-node-1"] {
		t.Error("a changed manifest kept its UID")
	}
	writeFile(t, a, manifest("a", "nginx:1"))
	if back := uids(dir); back["a-node-1"] != first["a-node-1"] {
		t.Error("the original content must give the original UID back")
	}
	b := filepath.Join(dir, "b.yaml")
	if err := os.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	if moved := uids(dir); moved["a-node-1"] == first["a-node-1"] {
		t.Error("another file path kept the UID")
	}
}

// TestFileSourceUnreadableFileKeepsPods: a file that cannot be read (here
// a symlink loop, which even root cannot read) keeps its last good pods.
func TestFileSourceUnreadableFileKeepsPods(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.yaml")
	writeFile(t, a, manifest("a", "nginx"))
	h := startFile(t, FileOptions{Path: dir, Period: 20 * time.Millisecond})
	collect(t, h.m.Updates(), "file/ADD:a-node-1")
	// Replace the file atomically by a symlink to itself.
	tmp := filepath.Join(dir, ".loop")
	if err := os.Symlink(a, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, a); err != nil {
		t.Fatal(err)
	}
	h.waitProblem(t, a, "too many levels of symbolic links")
	expectNone(t, h.m.Updates(), 100*time.Millisecond)
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	collect(t, h.m.Updates(), "file/REMOVE:a-node-1")
}

func TestNewFileSourceOptions(t *testing.T) {
	t.Parallel()
	if _, err := NewFileSource(FileOptions{NodeName: node}); err == nil {
		t.Error("no path must be an error")
	}
	if _, err := NewFileSource(FileOptions{Path: "/x"}); err == nil {
		t.Error("no node name must be an error")
	}
	s, err := NewFileSource(FileOptions{Path: "/x/../y/", NodeName: node})
	if err != nil || s.opts.Path != "/y" || s.opts.Period != DefaultCheckFrequency || s.opts.Debounce != DefaultDebounce || s.Name() != SourceFile {
		t.Errorf("defaults: %+v %v", s.opts, err)
	}
}
