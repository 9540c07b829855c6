package eviction

import (
	"errors"
	"math"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The PSI (pressure stall information) signals kernelet observes beyond
// kubelet's: the avg10 of a line of /proc/pressure/{memory,io,cpu} for the
// node, and of kubepods' {memory,io,cpu}.pressure for the pods (the same
// names with KubepodsPrefix). Their values are percentages of stalled
// time (0–100) and a threshold is met when the signal is ABOVE it. They
// are accepted only in the KerneletConfiguration's eviction maps: kubelet
// would reject them in a KubeletConfiguration.
const (
	SignalMemoryPressureSome Signal = "memory.pressure.some.avg10"
	SignalMemoryPressureFull Signal = "memory.pressure.full.avg10"
	SignalIOPressureFull     Signal = "io.pressure.full.avg10"
	SignalCPUPressureSome    Signal = "cpu.pressure.some.avg10"

	SignalKubepodsMemoryPressureSome Signal = KubepodsPrefix + "memory.pressure.some.avg10"
	SignalKubepodsMemoryPressureFull Signal = KubepodsPrefix + "memory.pressure.full.avg10"
	SignalKubepodsIOPressureFull     Signal = KubepodsPrefix + "io.pressure.full.avg10"
	SignalKubepodsCPUPressureSome    Signal = KubepodsPrefix + "cpu.pressure.some.avg10"

	// KubepodsPrefix names the PSI signals of the pods' cgroup (kubepods).
	KubepodsPrefix = "kubepods."
)

// PSISignals lists the PSI signals in a stable order: the node's, then
// kubepods'.
var PSISignals = []Signal{
	SignalMemoryPressureSome, SignalMemoryPressureFull, SignalIOPressureFull, SignalCPUPressureSome,
	SignalKubepodsMemoryPressureSome, SignalKubepodsMemoryPressureFull, SignalKubepodsIOPressureFull, SignalKubepodsCPUPressureSome,
}

// OpGreaterThan: the threshold is met when the observed value is above it
// (PSI signals).
const OpGreaterThan Operator = "GreaterThan"

// ConditionPSIPressure is kernelet's own node condition, set while a PSI
// threshold is met (when the KerneletConfiguration's psiNodeCondition is
// on), with the reasons and messages below.
const ConditionPSIPressure v1.NodeConditionType = "kernelet.io/PSIPressure"

// The reasons and messages of ConditionPSIPressure.
const (
	ReasonPSIPressure    = "KerneletHasPSIPressure"
	ReasonNoPSIPressure  = "KerneletHasNoPSIPressure"
	MessagePSIPressure   = "kernelet observes pressure stall above a PSI threshold"
	MessageNoPSIPressure = "kernelet observes pressure stall below every PSI threshold"
)

const (
	psiScale       = 10000 // an observation counts hundredths of a percent
	psiSentenceFmt = "Pressure %s: %s, threshold: %s. "
)

// PSI reports whether s is a PSI signal.
func (s Signal) PSI() bool {
	for _, k := range PSISignals {
		if s == k {
			return true
		}
	}
	return false
}

// PSIStats are one cgroup's (or the node's) PSI avg10 values in percent;
// a line the kernel does not provide has Known false.
type PSIStats struct {
	MemorySome, MemoryFull, IOFull, CPUSome PSIValue
}

// PSIValue is one avg10 value in percent.
type PSIValue struct {
	Known bool
	Avg10 float64
}

// observePSI adds the PSI signals of the node (node) and of kubepods (pods)
// to obs. For a PSI signal, Observation.Available holds the stall in
// hundredths of a percent and Capacity is 10000 (100 %).
func observePSI(obs Observations, node, pods *PSIStats, s Stats) {
	add := func(prefix string, p *PSIStats) {
		if p == nil {
			return
		}
		for _, v := range []struct {
			sig Signal
			val PSIValue
		}{
			{SignalMemoryPressureSome, p.MemorySome}, {SignalMemoryPressureFull, p.MemoryFull},
			{SignalIOPressureFull, p.IOFull}, {SignalCPUPressureSome, p.CPUSome},
		} {
			if v.val.Known {
				obs[Signal(prefix)+v.sig] = Observation{Available: int64(math.Round(v.val.Avg10 * 100)), Capacity: psiScale, Time: s.Time}
			}
		}
	}
	add("", node)
	add(KubepodsPrefix, pods)
}

// psiQuantity is a PSI threshold value in hundredths of a percent.
func psiQuantity(v Value) int64 { return int64(math.Round(v.Percentage * psiScale)) }

// psiMet: the stall is above the threshold; with enforceMinReclaim (the
// threshold is met already) it stays met until the stall falls to the
// threshold minus the minimum reclaim.
func psiMet(t Threshold, o Observation, enforceMinReclaim bool) bool {
	q := psiQuantity(t.Value)
	if enforceMinReclaim && t.MinReclaim != nil {
		q -= psiQuantity(*t.MinReclaim)
	}
	return o.Available > q
}

// resourceOfPSI is the resource a PSI signal reclaims: memory, io or cpu.
func resourceOfPSI(s Signal) v1.ResourceName {
	name := strings.TrimPrefix(string(s), KubepodsPrefix)
	return v1.ResourceName(name[:strings.IndexByte(name, '.')])
}

// FormatPSI renders a PSI observation (hundredths of a percent) as a
// percentage, e.g. 35.2%.
func FormatPSI(v int64) string {
	return strconv.FormatFloat(float64(v)/100, 'f', -1, 64) + "%"
}

// parsePSIValue parses a PSI threshold: a percentage of stalled time,
// written "20%" or "20", above 0 and below 100.
func parsePSIValue(raw string) (*Value, error) {
	s := strings.TrimSuffix(strings.TrimSpace(raw), "%")
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, errPSIValue
	}
	if f <= 0 || f >= 100 {
		return nil, errPSIRange
	}
	return &Value{Percentage: f / 100}, nil
}

// KerneletAPIVersion is the apiVersion of kernelet's own configuration
// document, where PSI thresholds live.
const KerneletAPIVersion = "kernelet.io/v1alpha1"

var (
	errPSIValue = errors.New("must be a percentage of stalled time (e.g. 20%)")
	errPSIRange = errors.New("must be above 0% and below 100%")
)

// path is the field path of one of the eviction map fields.
func (c Config) path(name string) *field.Path {
	if c.Path == nil {
		return field.NewPath(name)
	}
	return c.Path.Child(name)
}

// parseValue parses one map value: a PSI percentage, or kubelet's
// quantity or percentage.
func (c Config) parseValue(raw string) (*Value, error) {
	if c.PSI {
		return parsePSIValue(raw)
	}
	return parseValue(raw)
}

func (c Config) operator() Operator {
	if c.PSI {
		return OpGreaterThan
	}
	return OpLessThan
}
