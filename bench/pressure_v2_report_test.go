package bench

import (
	"testing"
)

// containerd 2.4's journal lines in the v2 node (trimmed ids).
const pressureV2Journal = `1795978108.701755 n containerd[182]: time="x" level=info msg="RunPodSandbox for name:\"p-0\"  uid:\"3f1bfdd5-6aa3\"  namespace:\"ns\""
1795978113.923246 n containerd[182]: time="x" level=info msg="RunPodSandbox for name:\"p-0\"  uid:\"3f1bfdd5-6aa3\"  namespace:\"ns\" returns sandbox id \"711a19b88392b1e31622c9a49f4eb9ab8ccf3469666c0def8e0becd2044a09ef\""
1795978114.194302 n containerd[182]: time="x" level=info msg="CreateContainer within sandbox \"711a19b88392b1e31622c9a49f4eb9ab8ccf3469666c0def8e0becd2044a09ef\" for container name:\"app\""
1795978114.980288 n containerd[182]: time="x" level=info msg="CreateContainer within sandbox \"711a19b88392b1e31622c9a49f4eb9ab8ccf3469666c0def8e0becd2044a09ef\" for name:\"app\" returns container id \"91d966aa7e97b03168c5be137ce7d0a65418576b9eac4482726ac6ce5f982ff9\""
1795978120.000000 n containerd[182]: time="x" level=info msg="RunPodSandbox for name:\"q-0\"  uid:\"aaaa-bbbb\"  namespace:\"ns\" returns sandbox id \"0a26557b245249522e404e1a97db2295b735de5c2b7b8c569984f242d2ac6730\""
1795978127.300440 n containerd[182]: time="x" level=info msg="StopContainer for \"91d966aa7e97b03168c5be137ce7d0a65418576b9eac4482726ac6ce5f982ff9\" with timeout 1 (s)"
1795978131.316499 n containerd[182]: time="x" level=info msg="StopContainer for \"91d966aa7e97b03168c5be137ce7d0a65418576b9eac4482726ac6ce5f982ff9\" returns successfully"
1795978131.359005 n containerd[182]: time="x" level=info msg="StopPodSandbox for \"711a19b88392b1e31622c9a49f4eb9ab8ccf3469666c0def8e0becd2044a09ef\""
1795978132.000000 n containerd[182]: time="x" level=info msg="StopPodSandbox for \"0a26557b245249522e404e1a97db2295b735de5c2b7b8c569984f242d2ac6730\""
`

func TestPressureV2Stops(t *testing.T) {
	got := parseStops(pressureV2Journal)
	if len(got) != 2 {
		t.Fatalf("stops %v, want two pods", got)
	}
	if s := got["3f1bfdd5-6aa3"]; s.Unix() != 1795978127 || s.Nanosecond()/1000 != 300440 {
		t.Errorf("first stop of p: %v, want the StopContainer at 1795978127.300440", s)
	}
	if s := got["aaaa-bbbb"]; s.Unix() != 1795978132 {
		t.Errorf("first stop of q: %v, want its StopPodSandbox", s)
	}
}
