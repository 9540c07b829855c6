package config

import (
	"fmt"
	"maps"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// FieldDecision is what kernelet does with one KubeletConfiguration field.
type FieldDecision int

const (
	// FieldActed: kernelet acts on the field; the values it cannot honour
	// are refused by name (validate.go, unimplemented.go).
	FieldActed FieldDecision = iota
	// FieldRefused: kernelet has no code for the field: any value other
	// than kernelet's default is an error naming it.
	FieldRefused
	// FieldWarned: the field changes nothing on a node like this one (a
	// CRI runtime, no cAdvisor, kernel notifications always on): a value
	// other than the default gets one warning naming it.
	FieldWarned
	// FieldMeta: apiVersion and kind.
	FieldMeta
)

// FieldRule is kernelet's decision about a field and why.
type FieldRule struct {
	Decision FieldDecision
	Why      string
}

// kubeletFields is kernelet's rule for every field of the
// KubeletConfiguration v1beta1 of kubelet v1.37.2, by JSON name ("" for
// the inlined apiVersion and kind). TestEveryKubeletFieldDecided fails
// for a field missing here (a new field of a newer version) until it is
// decided.
var kubeletFields = map[string]FieldRule{
	"":                                          {FieldMeta, "apiVersion and kind"},
	"staticPodPath":                             {FieldActed, "agent/sources: static pod files"},
	"podLogsDir":                                {FieldActed, "agent/logs: container log files"},
	"syncFrequency":                             {FieldActed, "agent/podworkers: periodic pod sync"},
	"fileCheckFrequency":                        {FieldActed, "agent/sources: static pod files"},
	"httpCheckFrequency":                        {FieldActed, "agent/sources: static pod URL"},
	"staticPodURL":                              {FieldActed, "agent/sources: static pod URL"},
	"staticPodURLHeader":                        {FieldActed, "agent/sources: static pod URL"},
	"address":                                   {FieldActed, "agent/server: kubelet API"},
	"port":                                      {FieldActed, "agent/server: kubelet API"},
	"readOnlyPort":                              {FieldActed, "agent/server: read-only port"},
	"tlsCertFile":                               {FieldActed, "agent/server: serving certificate"},
	"tlsPrivateKeyFile":                         {FieldActed, "agent/server: serving certificate"},
	"tlsCipherSuites":                           {FieldActed, "agent/server: TLS"},
	"tlsCurvePreferences":                       {FieldActed, "refused unless empty (unimplemented.go)"},
	"tlsMinVersion":                             {FieldActed, "agent/server: TLS"},
	"rotateCertificates":                        {FieldActed, "the client certificate renewed at 70–90 % of its lifetime (agent/certificates)"},
	"serverTLSBootstrap":                        {FieldActed, "the serving certificate from kubelet-serving CSRs (agent/certificates)"},
	"authentication":                            {FieldActed, "agent/server/auth"},
	"authorization":                             {FieldActed, "agent/server/auth"},
	"registryPullQPS":                           {FieldActed, "agent/runtime: image pulls"},
	"registryBurst":                             {FieldActed, "agent/runtime: image pulls"},
	"imagePullCredentialsVerificationPolicy":    {FieldActed, "NeverVerify only (unimplemented.go)"},
	"preloadedImagesVerificationAllowlist":      {FieldActed, "refused unless empty (unimplemented.go)"},
	"eventRecordQPS":                            {FieldActed, "status/events"},
	"eventBurst":                                {FieldActed, "status/events"},
	"enableDebuggingHandlers":                   {FieldActed, "agent/server"},
	"enableContentionProfiling":                 {FieldActed, "agent: block profile rate"},
	"healthzPort":                               {FieldActed, "agent/server: healthz"},
	"healthzBindAddress":                        {FieldActed, "agent/server: healthz"},
	"oomScoreAdj":                               {FieldActed, "oom: the agent's own oom_score_adj"},
	"clusterDomain":                             {FieldActed, "pod DNS"},
	"clusterDNS":                                {FieldActed, "pod DNS"},
	"streamingConnectionIdleTimeout":            {FieldActed, "agent/streaming"},
	"nodeStatusUpdateFrequency":                 {FieldActed, "status/node"},
	"nodeStatusReportFrequency":                 {FieldActed, "status/node"},
	"nodeLeaseDurationSeconds":                  {FieldActed, "status/node: Lease"},
	"imageMinimumGCAge":                         {FieldActed, "agent/gc: image GC"},
	"imageMaximumGCAge":                         {FieldActed, "agent/gc: image GC"},
	"imageGCHighThresholdPercent":               {FieldActed, "agent/gc: image GC"},
	"imageGCLowThresholdPercent":                {FieldActed, "agent/gc: image GC"},
	"cgroupRoot":                                {FieldActed, "agent/podsetup: cgroups"},
	"cgroupDriver":                              {FieldActed, "agent/podsetup: cgroups"},
	"cpuManagerPolicy":                          {FieldActed, "agent/cpumanager: none or static"},
	"singleProcessOOMKill":                      {FieldActed, "memory.oom.group"},
	"cpuManagerPolicyOptions":                   {FieldActed, "agent/cpumanager: full-pcpus-only, strict-cpu-reservation, prefer-align-cpus-by-uncorecache; others refused"},
	"memoryManagerPolicy":                       {FieldActed, "agent/memorymanager: None or Static"},
	"topologyManagerPolicy":                     {FieldActed, "agent/topologymanager"},
	"topologyManagerPolicyOptions":              {FieldActed, "agent/topologymanager: max-allowable-numa-nodes; prefer-closest-numa-nodes refused"},
	"qosReserved":                               {FieldActed, "refused unless empty (unimplemented.go)"},
	"runtimeRequestTimeout":                     {FieldActed, "agent/runtime"},
	"maxPods":                                   {FieldActed, "admission and node capacity"},
	"podPidsLimit":                              {FieldActed, "agent/podsetup: pids.max"},
	"resolvConf":                                {FieldActed, "pod DNS"},
	"runOnce":                                   {FieldActed, "cmd/kernelet: run once"},
	"cpuCFSQuota":                               {FieldActed, "agent/runtime/podconfig"},
	"cpuCFSQuotaPeriod":                         {FieldActed, "agent/runtime/podconfig"},
	"nodeStatusMaxImages":                       {FieldActed, "status/node"},
	"contentType":                               {FieldActed, "API clients"},
	"kubeAPIQPS":                                {FieldActed, "API clients"},
	"kubeAPIBurst":                              {FieldActed, "API clients"},
	"serializeImagePulls":                       {FieldActed, "agent/runtime: image pulls"},
	"maxParallelImagePulls":                     {FieldActed, "agent/runtime: image pulls"},
	"evictionHard":                              {FieldActed, "eviction"},
	"evictionSoft":                              {FieldActed, "eviction"},
	"evictionSoftGracePeriod":                   {FieldActed, "eviction"},
	"evictionPressureTransitionPeriod":          {FieldActed, "eviction"},
	"evictionMaxPodGracePeriod":                 {FieldActed, "eviction"},
	"evictionMinimumReclaim":                    {FieldActed, "eviction"},
	"mergeDefaultEvictionSettings":              {FieldActed, "eviction defaults"},
	"podsPerCore":                               {FieldActed, "admission and node capacity"},
	"protectKernelDefaults":                     {FieldActed, "start checks (host.go)"},
	"featureGates":                              {FieldActed, "featuregates_kernelet.go"},
	"failSwapOn":                                {FieldActed, "start checks (host.go)"},
	"memorySwap":                                {FieldActed, "NoSwap and LimitedSwap"},
	"containerLogMaxSize":                       {FieldActed, "agent/logs: rotation"},
	"containerLogMaxFiles":                      {FieldActed, "agent/logs: rotation"},
	"containerLogMaxWorkers":                    {FieldActed, "agent/logs: rotation"},
	"containerLogMonitorInterval":               {FieldActed, "agent/logs: rotation"},
	"configMapAndSecretChangeDetectionStrategy": {FieldActed, "agent/volume"},
	"systemReserved":                            {FieldActed, "allocatable"},
	"kubeReserved":                              {FieldActed, "allocatable"},
	"reservedSystemCPUs":                        {FieldActed, "agent/cpumanager and allocatable"},
	"showHiddenMetricsForVersion":               {FieldActed, "refused unless empty (unimplemented.go)"},
	"systemReservedCgroup":                      {FieldActed, "used by kubelet only to enforce system-reserved, which is refused"},
	"kubeReservedCgroup":                        {FieldActed, "used by kubelet only to enforce kube-reserved, which is refused"},
	"enforceNodeAllocatable":                    {FieldActed, "pods or none; the reserved cgroups refused (unimplemented.go)"},
	"allowedUnsafeSysctls":                      {FieldActed, "sysctl admission"},
	"defaultPodSysctls":                         {FieldActed, "refused unless empty (unimplemented.go)"},
	"volumePluginDir":                           {FieldActed, "refused unless kubelet's default (unimplemented.go)"},
	"providerID":                                {FieldActed, "status/node: spec.providerID"},
	"logging":                                   {FieldActed, "component-base's logs API: text or json (unimplemented.go)"},
	"enableSystemLogHandler":                    {FieldActed, "agent/server: /logs/"},
	"enableSystemLogQuery":                      {FieldActed, "false only (unimplemented.go)"},
	"shutdownGracePeriod":                       {FieldActed, "0 only (unimplemented.go)"},
	"shutdownGracePeriodCriticalPods":           {FieldActed, "at most shutdownGracePeriod, so 0"},
	"shutdownGracePeriodByPodPriority":          {FieldActed, "refused unless empty (unimplemented.go)"},
	"crashLoopBackOff":                          {FieldActed, "agent/podworkers: back-off"},
	"reservedMemory":                            {FieldActed, "agent/memorymanager (Static)"},
	"enableProfilingHandler":                    {FieldActed, "agent/server: /debug/pprof"},
	"seccompDefault":                            {FieldActed, "agent/runtime/podconfig"},
	"memoryThrottlingFactor":                    {FieldActed, "memory QoS"},
	"memoryReservationPolicy":                   {FieldActed, "memory QoS"},
	"registerWithTaints":                        {FieldActed, "status/node: registration"},
	"registerNode":                              {FieldActed, "status/node: registration"},
	"tracing":                                   {FieldActed, "refused unless unset (unimplemented.go)"},
	"localStorageCapacityIsolation":             {FieldActed, "ephemeral storage eviction"},
	"containerRuntimeEndpoint":                  {FieldActed, "agent/runtime"},
	"imageServiceEndpoint":                      {FieldActed, "unset or containerRuntimeEndpoint (unimplemented.go)"},
	"failCgroupV1":                              {FieldActed, "start checks (host.go)"},
	"userNamespaces":                            {FieldActed, "agent/runtime/podconfig: user namespaces"},
	"cpuManagerReconcilePeriod":                 {FieldActed, "agent/cpumanager: reconcile loop"},
	"topologyManagerScope":                      {FieldActed, "agent/topologymanager"},

	"enableServer":                 {FieldRefused, "kernelet always serves the kubelet API"},
	"cgroupsPerQOS":                {FieldRefused, "kernelet always creates the QoS cgroup hierarchy"},
	"enableControllerAttachDetach": {FieldRefused, "kernelet attaches and detaches no volumes itself: the attach/detach controller does"},
	"kubeletCgroups":               {FieldRefused, "kernelet does not move itself into a cgroup: run it in one (systemd slice)"},
	"systemCgroups":                {FieldRefused, "kernelet does not move the system's processes into a cgroup"},
	"podCIDR":                      {FieldRefused, "kernelet does not hand a pod CIDR to the runtime: the CNI configuration sets it"},
	"maxOpenFiles":                 {FieldRefused, "kernelet does not raise its own open files limit: set LimitNOFILE in its unit"},

	"hairpinMode":             {FieldWarned, "hairpin NAT is the CNI plugin's with a CRI runtime"},
	"iptablesMasqueradeBit":   {FieldWarned, "kernelet writes no iptables rules"},
	"iptablesDropBit":         {FieldWarned, "kernelet writes no iptables rules"},
	"makeIPTablesUtilChains":  {FieldWarned, "kernelet writes no iptables rules (kube-proxy keeps its own chains)"},
	"kernelMemcgNotification": {FieldWarned, "kernelet always takes memory notifications from the kernel"},
	"volumeStatsAggPeriod":    {FieldWarned, "kernelet measures volumes when the Summary API is asked"},
	"enableDebugFlagsHandler": {FieldWarned, "kernelet serves no /debug/flags/v"},
}

// KubeletFields returns kernelet's rule for every KubeletConfiguration
// field by JSON name (docs, tests).
func KubeletFields() map[string]FieldRule {
	return maps.Clone(kubeletFields)
}

func jsonName(f reflect.StructField) string {
	return strings.Split(f.Tag.Get("json"), ",")[0]
}

// validateFields refuses the refused fields and warns about the warned
// ones whose value differs from kernelet's default, one each.
func validateFields(errs field.ErrorList, kc *kubeletv1beta1.KubeletConfiguration) (field.ErrorList, []Warning) {
	var def kubeletv1beta1.KubeletConfiguration
	SetDefaults(&def)
	var warnings []Warning
	v, d := reflect.ValueOf(kc).Elem(), reflect.ValueOf(&def).Elem()
	for i := range v.NumField() {
		name := jsonName(v.Type().Field(i))
		r, ok := kubeletFields[name]
		if !ok || reflect.DeepEqual(v.Field(i).Interface(), d.Field(i).Interface()) {
			continue
		}
		val := shown(v.Field(i))
		switch r.Decision {
		case FieldRefused:
			errs = append(errs, field.Invalid(field.NewPath(name), val, fmt.Sprintf("kernelet does not support %s (%s): must be unset or %v", name, r.Why, shown(d.Field(i)))))
		case FieldWarned:
			warnings = append(warnings, Warning{Field: name, Msg: fmt.Sprintf("kernelet does not act on %s (%s): %v changes nothing", name, r.Why, val)})
		}
	}
	return errs, warnings
}

// shown is a field's value for a message: pointers followed.
func shown(v reflect.Value) any {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "unset"
		}
		v = v.Elem()
	}
	if d, ok := v.Interface().(interface{ String() string }); ok && v.Kind() == reflect.Struct {
		return d.String()
	}
	return v.Interface()
}
