package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "state")
	for _, content := range []string{"one", "two, longer"} {
		if err := Write(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || string(b) != content {
			t.Fatalf("read back %q, %v; want %q", b, err, content)
		}
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", st.Mode(), err)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".state.*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	if err := Write(filepath.Join(path, "under-a-file"), []byte("x"), 0o600); err == nil {
		t.Fatal("writing under a regular file succeeded")
	}
}
