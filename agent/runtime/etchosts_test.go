package runtime

import (
	"os"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWriteEtcHostsOnlyOnChange: a sync that finds the pod's hosts file
// as it would write it leaves it alone (same inode: no rewrite); another
// pod IP rewrites it.
func TestWriteEtcHostsOnlyOnChange(t *testing.T) {
	m, _, _ := newFakeManager(t)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1"}}
	inode := func(p string) uint64 {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	p, err := m.writeEtcHosts(pod, []string{"10.0.0.5"}, "cluster.local")
	if err != nil {
		t.Fatal(err)
	}
	first := inode(p)
	if _, err := m.writeEtcHosts(pod, []string{"10.0.0.5"}, "cluster.local"); err != nil {
		t.Fatal(err)
	}
	if inode(p) != first {
		t.Error("the same content was written again")
	}
	if _, err := m.writeEtcHosts(pod, []string{"10.0.0.6"}, "cluster.local"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), "10.0.0.6") || strings.Contains(string(b), "10.0.0.5") {
		t.Errorf("after the IP changed the file holds:\n%s", b)
	}
}
