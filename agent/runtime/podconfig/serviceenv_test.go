package podconfig

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func svc(ns, name, ip string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

func TestServiceEnv(t *testing.T) {
	services := []*v1.Service{
		svc("default", "kubernetes", "10.0.0.1", v1.ServicePort{Name: "https", Port: 443, Protocol: v1.ProtocolTCP}),
		svc("app", "my-svc", "10.0.0.7", v1.ServicePort{Name: "http", Port: 80, Protocol: v1.ProtocolTCP},
			v1.ServicePort{Port: 53, Protocol: v1.ProtocolUDP}),
		svc("app", "headless", v1.ClusterIPNone, v1.ServicePort{Port: 80}),
		svc("other", "elsewhere", "10.0.0.9", v1.ServicePort{Port: 80}),
	}
	env := map[string]string{}
	for _, e := range ServiceEnv(services, "app", true) {
		env[e.Name] = e.Value
	}
	want := map[string]string{
		"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443", "KUBERNETES_SERVICE_PORT_HTTPS": "443",
		"KUBERNETES_PORT": "tcp://10.0.0.1:443", "KUBERNETES_PORT_443_TCP_ADDR": "10.0.0.1",
		"MY_SVC_SERVICE_HOST": "10.0.0.7", "MY_SVC_SERVICE_PORT": "80", "MY_SVC_SERVICE_PORT_HTTP": "80",
		"MY_SVC_PORT": "tcp://10.0.0.7:80", "MY_SVC_PORT_80_TCP": "tcp://10.0.0.7:80",
		"MY_SVC_PORT_80_TCP_PROTO": "tcp", "MY_SVC_PORT_80_TCP_PORT": "80", "MY_SVC_PORT_80_TCP_ADDR": "10.0.0.7",
		"MY_SVC_PORT_53_UDP": "udp://10.0.0.7:53", "MY_SVC_PORT_53_UDP_PROTO": "udp",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	for _, k := range []string{"HEADLESS_SERVICE_HOST", "ELSEWHERE_SERVICE_HOST"} {
		if _, ok := env[k]; ok {
			t.Errorf("%s set", k)
		}
	}
	// Without service links only the kubernetes service remains.
	for _, e := range ServiceEnv(services, "app", false) {
		if e.Name[:10] != "KUBERNETES" {
			t.Errorf("enableServiceLinks false gave %s", e.Name)
		}
	}
}

func TestServiceEnvOverriddenByContainerEnv(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "app"}}
	c := &v1.Container{Name: "c", Env: []v1.EnvVar{{Name: "MY_SVC_SERVICE_HOST", Value: "mine"},
		{Name: "URL", Value: "http://$(MY_SVC_SERVICE_HOST):$(MY_SVC_SERVICE_PORT)"}}}
	opts := ContainerOptions{ServiceEnv: ServiceEnv([]*v1.Service{svc("app", "my-svc", "10.0.0.7", v1.ServicePort{Port: 80})}, "app", true)}
	kvs, err := ContainerEnv(pod, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range kvs {
		got[kv.Key] = string(kv.Value)
	}
	if got["MY_SVC_SERVICE_HOST"] != "mine" || got["URL"] != "http://mine:80" {
		t.Errorf("env %v", got)
	}
}
