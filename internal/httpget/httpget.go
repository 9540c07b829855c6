package httpget

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ResolvePort is the number of port: a number (also as a string), or the
// named port of c.
func ResolvePort(port intstr.IntOrString, c *v1.Container) (int, error) {
	n := port.IntValue()
	if port.Type == intstr.String {
		if v, err := strconv.Atoi(port.StrVal); err == nil {
			n = v
		} else {
			n = 0
			if c != nil {
				for _, cp := range c.Ports {
					if cp.Name == port.StrVal {
						n = int(cp.ContainerPort)
					}
				}
			}
			if n == 0 {
				return 0, fmt.Errorf("couldn't find port: %s in container %s", port.StrVal, containerName(c))
			}
		}
	}
	if n <= 0 || n > 65535 {
		return 0, fmt.Errorf("invalid port number: %d", n)
	}
	return n, nil
}

func containerName(c *v1.Container) string {
	if c == nil {
		return ""
	}
	return c.Name
}

// URL is the URL of g for container c: its scheme (default http), its
// host or else defaultHost (the pod's IP), the resolved port, and its path
// (with its query, a leading "/" added when missing).
func URL(g *v1.HTTPGetAction, c *v1.Container, defaultHost string) (*url.URL, error) {
	port, err := ResolvePort(g.Port, c)
	if err != nil {
		return nil, err
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	u, err := url.Parse(g.Path)
	if err != nil {
		u = &url.URL{Path: g.Path}
	}
	if !strings.HasPrefix(u.Path, "/") {
		u.Path = "/" + u.Path
	}
	host := g.Host
	if host == "" {
		host = defaultHost
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	return u, nil
}

// UserAgent is kubelet's User-Agent of product ("kube-probe",
// "kube-lifecycle") for a Kubernetes version: "v1.37.2" →
// "kube-probe/1.37".
func UserAgent(product, kubeVersion string) string {
	v := strings.TrimPrefix(kubeVersion, "v")
	if parts := strings.SplitN(v, ".", 3); len(parts) >= 2 {
		v = parts[0] + "." + parts[1]
	}
	return product + "/" + v
}

// IsHTTPResponseToHTTPS tells whether err is Go's answer to an https
// request that a plain-HTTP server answered: the case in which kubelet
// retries an https lifecycle hook over http (hooks used to ignore the
// scheme, so old pods may name https for an http server).
func IsHTTPResponseToHTTPS(err error) bool {
	return err != nil && strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}

// FallbackMessage is the message of the Warning LifecycleHTTPFallback
// event kubelet records when the http retry of an https hook succeeded.
func FallbackMessage(host string) string {
	return fmt.Sprintf("request to HTTPS lifecycle hook %s got HTTP response, retry with HTTP succeeded", host)
}

// EventLifecycleHTTPFallback is the reason of that event.
const EventLifecycleHTTPFallback = "LifecycleHTTPFallback"
