// Package podconfig turns a v1.Pod into what the container runtime is
// given, as pure functions of the pod and of options the caller computes:
//   - the PodSandboxConfig and ContainerConfigs (podconfig.go:
//     SandboxConfig, ContainerConfig, the oom_score_adj requested), the
//     sandbox's resolver configuration (podconfig_dns.go: DNSConfig,
//     ParseResolvConf) and a container's environment with $(VAR)
//     expansion (podconfig_env.go: ContainerEnv, Expand);
//   - a container's Memory QoS entries of the CRI unified map as kubelet
//     v1.37 sets them on cgroup v2 (memoryqos.go: ContainerMemoryQoS);
//   - the labels and annotations kernelet puts on sandboxes and
//     containers, the container spec hash, and their parsing back
//     (labels.go);
//   - the content of the managed /etc/hosts (etchosts.go), the service
//     link variables (serviceenv.go), the runtime handler from
//     runtimeClassName (runtimeclass.go);
//   - the admission check of pod fields kernelet cannot run
//     (podconfig_validate.go: ValidatePodForRuntime).
//
// Everything that depends on the node or has side effects (the pod's
// cgroup, prepared volume and subPath host paths, the termination-message
// file, pod IPs, configMap and secret lookups) comes in through
// SandboxOptions and ContainerOptions. The one thing read from the machine
// is the resolver file SandboxOptions.ResolvConf names. deps_test.go keeps
// it that way: an allow-list of imports, os and net limited to that read
// and to address parsing, and no CRI or API client among the dependencies.
// Package runtime calls the runtime with what is built here.
package podconfig
