package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// envFilesPod: an init container writes an env file into an emptyDir;
// the app container gets variables from it through env fileKeyRef
// (EnvFiles, beta and on in kubelet v1.37.2) and copies its environment to
// hostDir/<name>.env.
func envFilesPod(name, file, envLines, hostDir string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %[1]s, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: setup
    image: %[2]s
    imagePullPolicy: IfNotPresent
    command: ["/bin/sh", "-c", "printf %%s \"$CONTENT\" > /config/app.env"]
    env: [{name: CONTENT, value: %[3]q}]
    volumeMounts: [{name: config, mountPath: /config}]
  containers:
  - name: app
    image: %[2]s
    imagePullPolicy: IfNotPresent
    command: ["/bin/sh", "-c", "env > /host/%[1]s.env; exec sleep 3600"]
    env:
%[4]s
    volumeMounts: [{name: host, mountPath: /host}]
  volumes:
  - {name: config, emptyDir: {}}
  - {name: host, hostPath: {path: %[5]s, type: DirectoryOrCreate}}
`, name, images.TestboxImage, file, envLines, hostDir)
}

// TestAgentEnvFiles: env fileKeyRef as kubelet v1.37.2 reads it — values
// in single quotes, comments, multi-line values; an optional missing key
// defines nothing; a required missing key and a file that does not parse
// hold the container in CreateContainerConfigError with kubelet's messages,
// and other pods are not affected.
func TestAgentEnvFiles(t *testing.T) {
	cd := containerd.Shared(t)
	n, _, _ := newAgentWithCleanup(t, cd)
	hostDir := filepath.Join(t.TempDir(), "out")
	ref := func(name, key string, optional bool) string {
		return fmt.Sprintf("    - {name: %s, valueFrom: {fileKeyRef: {volumeName: config, path: app.env, key: %s, optional: %v}}}\n", name, key, optional)
	}
	good := "# settings\nGREETING='hello world' # inline comment\n  MULTI='line one\nline two'\nEMPTY= 'ignored'\n"
	writeManifest(t, n.manifests, "good.yaml", envFilesPod("good", good,
		ref("GREETING", "GREETING", false)+ref("MULTI", "MULTI", false)+ref("MAYBE", "ABSENT", true), hostDir))
	writeManifest(t, n.manifests, "missing.yaml", envFilesPod("missing", good, ref("NEED", "ABSENT", false), hostDir))
	writeManifest(t, n.manifests, "bad.yaml", envFilesPod("bad", "KEY=unquoted\n", ref("KEY", "KEY", false), hostDir))
	n.start(t)
	n.waitRunning(t, 90*time.Second, "good")
	waitFile(t, n, filepath.Join(hostDir, "good.env"), 30*time.Second)
	b, _ := os.ReadFile(filepath.Join(hostDir, "good.env"))
	env := string(b)
	for _, want := range []string{"GREETING=hello world\n", "MULTI=line one\nline two\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("environment lacks %q:\n%s", want, env)
		}
	}
	if strings.Contains(env, "MAYBE=") {
		t.Errorf("an optional missing key defined MAYBE:\n%s", env)
	}
	for name, msg := range map[string]string{
		"missing": `environment variable key "ABSENT" not found in file "`,
		"bad":     "couldn't parse env file",
	} {
		waitFor(t, 60*time.Second, name+" held in CreateContainerConfigError", func() (bool, error) {
			pod, ok := n.podStatus(t, name)
			if !ok {
				return false, fmt.Errorf("no status")
			}
			for _, cs := range pod.Status.ContainerStatuses {
				if w := cs.State.Waiting; cs.Name == "app" && w != nil && w.Reason == "CreateContainerConfigError" && strings.Contains(w.Message, msg) {
					return true, nil
				}
			}
			return false, fmt.Errorf("statuses %+v", pod.Status.ContainerStatuses)
		})
	}
}
