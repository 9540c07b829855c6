package podconfig

import (
	"net"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// ServiceEnv is the environment kubelet gives every container for the
// services it may reach (docker-link style variables): the `kubernetes`
// service of the default namespace always, and with enableServiceLinks
// every service of the pod's namespace. Services without a cluster IP
// (headless, ExternalName) give none. For a service "my-svc" with cluster
// IP A and a first port P/TCP named "http":
//
//	MY_SVC_SERVICE_HOST=A  MY_SVC_SERVICE_PORT=P  MY_SVC_SERVICE_PORT_HTTP=P
//	MY_SVC_PORT=tcp://A:P  MY_SVC_PORT_P_TCP=tcp://A:P
//	MY_SVC_PORT_P_TCP_PROTO=tcp  MY_SVC_PORT_P_TCP_PORT=P  MY_SVC_PORT_P_TCP_ADDR=A
//
// Variables come in service name order; the container's own env, defined
// after them, overrides any.
func ServiceEnv(services []*v1.Service, namespace string, enableServiceLinks bool) []v1.EnvVar {
	byName := map[string]*v1.Service{}
	for _, s := range services {
		if !serviceIPSet(s) {
			continue
		}
		switch {
		case s.Namespace == v1.NamespaceDefault && s.Name == "kubernetes":
			if _, taken := byName[s.Name]; !taken {
				byName[s.Name] = s
			}
		case enableServiceLinks && s.Namespace == namespace:
			byName[s.Name] = s
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []v1.EnvVar
	for _, n := range names {
		out = append(out, serviceVars(byName[n])...)
	}
	return out
}

func serviceIPSet(s *v1.Service) bool {
	ip := s.Spec.ClusterIP
	return ip != "" && ip != v1.ClusterIPNone
}

func envName(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "-", "_")) }

func serviceVars(s *v1.Service) []v1.EnvVar {
	name := envName(s.Name)
	ip := s.Spec.ClusterIP
	out := []v1.EnvVar{{Name: name + "_SERVICE_HOST", Value: ip}}
	if len(s.Spec.Ports) == 0 {
		return out
	}
	out = append(out, v1.EnvVar{Name: name + "_SERVICE_PORT", Value: strconv.Itoa(int(s.Spec.Ports[0].Port))})
	for _, p := range s.Spec.Ports {
		if p.Name != "" {
			out = append(out, v1.EnvVar{Name: name + "_SERVICE_PORT_" + envName(p.Name), Value: strconv.Itoa(int(p.Port))})
		}
	}
	for i, p := range s.Spec.Ports {
		proto := strings.ToLower(string(p.Protocol))
		if proto == "" {
			proto = "tcp"
		}
		port := strconv.Itoa(int(p.Port))
		url := proto + "://" + net.JoinHostPort(ip, port)
		if i == 0 {
			out = append(out, v1.EnvVar{Name: name + "_PORT", Value: url})
		}
		prefix := name + "_PORT_" + port + "_" + strings.ToUpper(proto)
		out = append(out,
			v1.EnvVar{Name: prefix, Value: url},
			v1.EnvVar{Name: prefix + "_PROTO", Value: proto},
			v1.EnvVar{Name: prefix + "_PORT", Value: port},
			v1.EnvVar{Name: prefix + "_ADDR", Value: ip})
	}
	return out
}
