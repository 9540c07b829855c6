// Command kubeletflags writes agent/config/kubeletflags/table.go: every
// command-line flag kubelet v1.37.2 accepts, with how kubelet binds it
// (its pflag value type), the KubeletConfiguration field it sets when it is
// one of the configuration's flags, and whether kubelet marks it
// deprecated.
//
//	go run ./hack/kubeletflags            # rewrite the table (make kubeletflags)
//	go run ./hack/kubeletflags -check     # fail if the committed table differs (make kubeletflags-check)
//
// Like hack/featuregates it reads the Go sources in the module cache with
// go/parser and never runs them. Kubelet's flag set is what
// cmd/kubelet/app.NewKubeletCommand puts in its clean flag set:
//
//   - cmd/kubelet/app/options: (*KubeletFlags).AddFlags, with
//     addContainerRuntimeFlags and the Linux addOSFlags, and
//     AddKubeletConfigFlags, which also calls logsapi.AddFlags for the
//     logging fields (component-base logs/api/v1); every flag of
//     AddKubeletConfigFlags is deprecated except those of its
//     notDeprecated map, and MarkDeprecated marks the others;
//   - AddGlobalFlags: cadvisor's housekeeping interval (a Go flag of
//     github.com/google/cadvisor/lib, named by cadvisorflags' constant,
//     underscores normalized to hyphens), verflag's --version and
//     logs.AddFlags, which adds nothing once the logging configuration's
//     flags are skipped (kubelet's option);
//   - cmd/kubelet/app/server.go: -h/--help.
package main
