package node_test

import (
	"context"
	"fmt"
	"net"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/kernelet/kernelet/internal/clientset/clientsettest"
	"github.com/kernelet/kernelet/status/node"
)

// The agent builds a Config from the defaulted KubeletConfiguration, the
// machine (node.ReadMachine) and its clients, and runs the Controller
// beside the pod workers; the Inputs function gathers what changes.
func ExampleController() {
	// The agent passes its internal/clientset clients; here client-go's
	// fake clientset, adapted.
	client := clientsettest.FromClientset(fake.NewClientset())
	version, _ := node.KubeletVersion("v1.37.2", "v0.1.0")
	ctl, err := node.New(node.Config{
		NodeName: "worker-1",
		Kubelet: &kubeletv1beta1.KubeletConfiguration{
			MaxPods: 110, Port: 10250, RegisterNode: ptr.To(true),
			NodeStatusUpdateFrequency: metav1.Duration{Duration: 10 * time.Second},
			NodeStatusReportFrequency: metav1.Duration{Duration: 5 * time.Minute},
			NodeLeaseDurationSeconds:  40,
			KubeReserved:              map[string]string{"memory": "512Mi"},
		},
		Machine: node.Machine{OperatingSystem: "linux", Architecture: "amd64", CPUs: 4,
			MemoryBytes: 8 << 30, EphemeralStorageBytes: 100 << 30},
		KubeletVersion: version,
		Client:         client,
		Inputs: func(ctx context.Context) node.Inputs {
			return node.Inputs{
				Runtime: node.RuntimeState{Name: "containerd", Version: "v1.7.2", LastSync: time.Now(),
					Conditions: []node.RuntimeCondition{{Type: "RuntimeReady", Status: true}, {Type: "NetworkReady", Status: true}}},
				NodeIPs: []net.IP{net.ParseIP("10.0.0.7")},
			}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ctl.Run(ctx) }()
	for ctl.Status().Registered.IsZero() {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done

	n := ctl.Node()
	mem := n.Status.Allocatable[v1.ResourceMemory]
	fmt.Println(n.Name, n.Status.NodeInfo.KubeletVersion, n.Status.NodeInfo.ContainerRuntimeVersion)
	fmt.Println("allocatable memory:", mem.String())
	for _, c := range n.Status.Conditions {
		fmt.Println(c.Type, c.Status, c.Reason)
	}
	// Output:
	// worker-1 v1.37.2+kernelet.v0.1.0 containerd://1.7.2
	// allocatable memory: 7680Mi
	// MemoryPressure False KubeletHasSufficientMemory
	// DiskPressure False KubeletHasNoDiskPressure
	// PIDPressure False KubeletHasSufficientPID
	// Ready True KubeletReady
}
