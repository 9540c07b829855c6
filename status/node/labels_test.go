package node

import (
	"maps"
	"strings"
	"testing"
)

func TestParseNodeLabels(t *testing.T) {
	const allowedTail = "\n--node-labels in the 'kubernetes.io' namespace must begin with an allowed prefix " +
		"(kubelet.kubernetes.io, node.kubernetes.io) or be in the specifically allowed set " +
		"(beta.kubernetes.io/arch, beta.kubernetes.io/instance-type, beta.kubernetes.io/os, " +
		"failure-domain.beta.kubernetes.io/region, failure-domain.beta.kubernetes.io/zone, kubernetes.io/arch, " +
		"kubernetes.io/hostname, kubernetes.io/os, node.kubernetes.io/instance-type, topology.kubernetes.io/region, " +
		"topology.kubernetes.io/zone)"
	for name, tc := range map[string]struct {
		in      string
		want    map[string]string
		wantErr string // the whole message when it starts with "unknown", else a part of it
	}{
		"empty":          {in: "", want: map[string]string{}},
		"two":            {in: "a=b, example.com/role=edge", want: map[string]string{"a": "b", "example.com/role": "edge"}},
		"empty value":    {in: "a=", want: map[string]string{"a": ""}},
		"no equals sign": {in: "a", wantErr: `"a": not key=value`},
		"bad key":        {in: "-a=b", wantErr: `key "-a"`},
		"bad value":      {in: "a=b c", wantErr: `value "b c" of a`},
		"allowed well-known labels": {in: "kubernetes.io/arch=amd64,kubernetes.io/hostname=h,kubernetes.io/os=linux," +
			"beta.kubernetes.io/arch=amd64,beta.kubernetes.io/instance-type=m5,beta.kubernetes.io/os=linux," +
			"failure-domain.beta.kubernetes.io/region=r,failure-domain.beta.kubernetes.io/zone=z," +
			"node.kubernetes.io/instance-type=m5,topology.kubernetes.io/region=r,topology.kubernetes.io/zone=z",
			want: map[string]string{"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": "h", "kubernetes.io/os": "linux",
				"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/instance-type": "m5", "beta.kubernetes.io/os": "linux",
				"failure-domain.beta.kubernetes.io/region": "r", "failure-domain.beta.kubernetes.io/zone": "z",
				"node.kubernetes.io/instance-type": "m5", "topology.kubernetes.io/region": "r", "topology.kubernetes.io/zone": "z"}},
		"allowed namespaces": {in: "kubelet.kubernetes.io/x=1,foo.node.kubernetes.io/y=2,node.kubernetes.io/z=3",
			want: map[string]string{"kubelet.kubernetes.io/x": "1", "foo.node.kubernetes.io/y": "2", "node.kubernetes.io/z": "3"}},
		"own domain": {in: "example.com/rack=r1,role=worker,kubernetes.io.example.com/a=b",
			want: map[string]string{"example.com/rack": "r1", "role": "worker", "kubernetes.io.example.com/a": "b"}},
		"node-role refused": {in: "node-role.kubernetes.io/worker=",
			wantErr: "unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [node-role.kubernetes.io/worker]" + allowedTail},
		"several refused, sorted": {in: "x.k8s.io/a=b,app.kubernetes.io/name=n,k8s.io/c=d,kubernetes.io/role=r,ok=1",
			wantErr: "unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: " +
				"[app.kubernetes.io/name k8s.io/c kubernetes.io/role x.k8s.io/a]" + allowedTail},
		"node-restriction refused": {in: "node-restriction.kubernetes.io/a=b", wantErr: "[node-restriction.kubernetes.io/a]"},
		"refused and invalid":      {in: "kubernetes.io/role=r,a=b c", wantErr: allowedTail + "\n" + `value "b c" of a`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ParseNodeLabels(tc.in)
			switch {
			case tc.wantErr == "":
				if err != nil {
					t.Fatalf("err %v", err)
				}
				if !maps.Equal(got, tc.want) {
					t.Errorf("got %v, want %v", got, tc.want)
				}
			case err == nil:
				t.Fatalf("no error, want %q", tc.wantErr)
			case strings.HasPrefix(tc.wantErr, "unknown"):
				if err.Error() != tc.wantErr {
					t.Errorf("err\n%s\nwant\n%s", err, tc.wantErr)
				}
			case !strings.Contains(err.Error(), tc.wantErr):
				t.Errorf("err %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}
