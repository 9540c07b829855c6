package buildinfo

import (
	goruntime "runtime"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestKubernetesLabels(t *testing.T) {
	platform := goruntime.GOOS + "/" + goruntime.GOARCH
	cases := map[string]struct {
		in   Info
		v    vcs
		want []string
	}{
		"clean build": {Info{KubeletVersion: "v1.37.2+kernelet.v0.3.0"}, vcs{revision: "abc", time: "2026-11-28T10:00:00Z"},
			[]string{"1", "37", "v1.37.2+kernelet.v0.3.0", "abc", "clean", "2026-11-28T10:00:00Z", "go1.x", goruntime.Compiler, platform}},
		"dirty build": {Info{KubeletVersion: "v1.36.0"}, vcs{revision: "abc", modified: true},
			[]string{"1", "36", "v1.36.0", "abc", "dirty", "1970-01-01T00:00:00Z", "go1.x", goruntime.Compiler, platform}},
		"no vcs, bad version": {Info{KubeletVersion: "x"}, vcs{},
			[]string{"", "", "x", "", "", "1970-01-01T00:00:00Z", "go1.x", goruntime.Compiler, platform}},
	}
	for name, c := range cases {
		if got := kubernetesLabels(c.in, c.v, "go1.x"); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %q, want %q", name, got, c.want)
		}
	}
}

func TestRegister(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := Register(reg, Info{Version: "v0.1.0", KubeletVersion: "v1.37.2+kernelet.v0-1-0", NodeName: "n1"}); err != nil {
		t.Fatal(err)
	}
	want := `# HELP kubelet_node_name The node's name. The count is always 1.
# TYPE kubelet_node_name gauge
kubelet_node_name{node="n1"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubelet_node_name"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg, "kernelet_build_info", "kubernetes_build_info"); err != nil || n != 2 {
		t.Errorf("build info series: %d, %v; want 2", n, err)
	}
	if err := Register(reg, Info{}); err == nil {
		t.Error("registering twice: no error")
	}
}
