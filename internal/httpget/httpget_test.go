package httpget

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestURL(t *testing.T) {
	c := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	for name, tc := range map[string]struct {
		g       v1.HTTPGetAction
		want    string
		wantErr string
	}{
		"number":              {g: v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(80)}, want: "http://10.0.0.2:80/healthz"},
		"named port":          {g: v1.HTTPGetAction{Path: "/x", Port: intstr.FromString("http")}, want: "http://10.0.0.2:8080/x"},
		"number as a string":  {g: v1.HTTPGetAction{Path: "/x", Port: intstr.FromString("81")}, want: "http://10.0.0.2:81/x"},
		"https and host":      {g: v1.HTTPGetAction{Scheme: v1.URISchemeHTTPS, Host: "h.example", Port: intstr.FromInt32(443)}, want: "https://h.example:443/"},
		"path without slash":  {g: v1.HTTPGetAction{Path: "ready", Port: intstr.FromInt32(80)}, want: "http://10.0.0.2:80/ready"},
		"query kept":          {g: v1.HTTPGetAction{Path: "/q?a=1&b=2", Port: intstr.FromInt32(80)}, want: "http://10.0.0.2:80/q?a=1&b=2"},
		"ipv6 pod ip":         {g: v1.HTTPGetAction{Path: "/", Host: "fd00::1", Port: intstr.FromInt32(80)}, want: "http://[fd00::1]:80/"},
		"unknown named port":  {g: v1.HTTPGetAction{Port: intstr.FromString("grpc")}, wantErr: "couldn't find port: grpc in container app"},
		"port out of range":   {g: v1.HTTPGetAction{Port: intstr.FromInt32(70000)}, wantErr: "invalid port number: 70000"},
		"zero port":           {g: v1.HTTPGetAction{Port: intstr.FromInt32(0)}, wantErr: "invalid port number: 0"},
		"string number range": {g: v1.HTTPGetAction{Port: intstr.FromString("0")}, wantErr: "invalid port number: 0"},
	} {
		t.Run(name, func(t *testing.T) {
			u, err := URL(&tc.g, c, "10.0.0.2")
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("URL = %v, %v; want error %q", u, err, tc.wantErr)
				}
				return
			}
			if err != nil || u.String() != tc.want {
				t.Fatalf("URL = %v, %v; want %s", u, err, tc.want)
			}
		})
	}
}

func TestUserAgent(t *testing.T) {
	for in, want := range map[string]string{"v1.37.2": "kube-probe/1.37", "1.33.13": "kube-probe/1.33", "v2": "kube-probe/2"} {
		if got := UserAgent("kube-probe", in); got != want {
			t.Errorf("UserAgent(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsHTTPResponseToHTTPS(t *testing.T) {
	if !IsHTTPResponseToHTTPS(errors.New(`Get "https://10.0.0.2:80/": http: server gave HTTP response to HTTPS client`)) {
		t.Error("Go's error for an http answer to https not recognised")
	}
	if IsHTTPResponseToHTTPS(errors.New("connection refused")) || IsHTTPResponseToHTTPS(nil) {
		t.Error("other errors recognised as an http answer to https")
	}
}
