package e2e

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLocalPersistentVolume: a static local PV (a directory, node
// affinity on this node's hostname) bound to its PVC by
// kube-controller-manager; a pod writes a file on it (fsGroup applied),
// a second pod reads it, and nothing stays mounted once both are gone.
func TestLocalPersistentVolume(t *testing.T) {
	c := newClusterNode(t)
	unmountAllUnder(t, c.root) // registered first: runs after the agent's cleanups
	c.start(t)
	start := time.Now()
	dir := t.TempDir()
	affinity := &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: []string{c.node}}}}}}}
	staticVolume(t, c, "local", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: dir}}, affinity)
	grace := int64(1)
	for i, script := range []string{"echo from-writer > /data/f", `test "$(cat /data/f)" = from-writer`} {
		name := []string{"writer", "reader"}[i]
		p := claimPod(name, "local", script)
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		gid := int64(3456)
		p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: &gid}
		p = c.createPod(t, p)
		c.waitPhase(t, name, v1.PodSucceeded, 2*time.Minute)
		if err := c.admin.CoreV1().Pods(c.ns).Delete(t.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
			t.Fatal(err)
		}
		c.waitGone(t, name, p.UID, time.Minute)
		if _, err := os.Stat(filepath.Join(c.root, "pods", string(p.UID))); !os.IsNotExist(err) {
			t.Errorf("pod %s's directory is left: %v", name, err)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil || st.Gid != 3456 {
		t.Errorf("the local volume's group %d (%v), want the fsGroup 3456", st.Gid, err)
	}
	if left := mountsUnder(t, c.root); len(left) > 0 {
		t.Errorf("mounts left under the agent root: %v", left)
	}
	t.Logf("local PV written and read by two pods in %v", time.Since(start).Round(time.Millisecond))
}
