package kubeletflags

// Decisions are kernelet's decision for every kubelet flag that is not a
// KubeletConfiguration field (TestEveryFlagDecided keeps it complete).
var Decisions = map[string]Decision{
	"config":                                {Acted: true, Why: "the KubeletConfiguration file (with kernelet's own document after it, or --kernelet-config)"},
	"kubeconfig":                            {Acted: true, Why: "the API server's kubeconfig; without it kernelet runs standalone"},
	"bootstrap-kubeconfig":                  {Acted: true, Why: "the bootstrap credentials of TLS bootstrap (agent/certificates)"},
	"cert-dir":                              {Acted: true, Why: "where the bootstrapped client certificate is kept (agent/certificates)"},
	"hostname-override":                     {Acted: true, Why: "the node name"},
	"node-ip":                               {Acted: true, Why: "the node's addresses"},
	"node-labels":                           {Acted: true, Why: "labels set when registering the node"},
	"root-dir":                              {Acted: true, Why: "kernelet's state directory"},
	"seccomp-default":                       {Acted: true, Why: "sets seccompDefault, as kubelet ORs the two"},
	"minimum-container-ttl-duration":        {Acted: true, Why: "container GC policy"},
	"maximum-dead-containers-per-container": {Acted: true, Why: "container GC policy"},
	"maximum-dead-containers":               {Acted: true, Why: "container GC policy"},
	"help":                                  {Acted: true, Why: "prints the flags, exit 0"},
	"version":                               {Acted: true, Why: "prints kernelet's version, exit 0"},

	"cloud-provider":                           {Why: "kernelet runs with no cloud provider (external cloud providers' node initialization is not implemented)"},
	"config-dir":                               {Why: "kernelet reads no drop-in configuration directory: merge the settings into --config"},
	"lock-file":                                {Why: "kernelet takes no lock file"},
	"exit-on-lock-contention":                  {Why: "kernelet takes no lock file"},
	"experimental-mounter-path":                {Why: "kernelet mounts with the system's mount"},
	"experimental-allocatable-ignore-eviction": {Why: "kernelet's allocatable always subtracts the hard eviction thresholds"},
	"runtime-cgroups":                          {Why: "kernelet does not move the container runtime into a cgroup"},
	"image-credential-provider-config":         {Why: "kernelet runs no image credential provider plugins (pull secrets work)"},
	"image-credential-provider-bin-dir":        {Why: "kernelet runs no image credential provider plugins (pull secrets work)"},
	"housekeeping-interval":                    {Why: "kernelet has no cAdvisor: it reads the cgroups when asked and on kernel events"},
}
