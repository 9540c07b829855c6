package cgroups

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

const (
	qosMiB = int64(1) << 20
	qosGiB = int64(1) << 30
)

func TestCPUShares(t *testing.T) {
	cases := map[string]struct {
		milli int64
		want  uint64
	}{
		"no request (BestEffort) gets the minimum": {0, 2},
		"negative is treated as none":              {-5, 2},
		"1m rounds down below the minimum":         {1, 2},
		"2m":                                       {2, 2},
		"3m is the first value above 2":            {3, 3},
		"100m":                                     {100, 102},
		"500m":                                     {500, 512},
		"1 CPU":                                    {1000, 1024},
		"2 CPUs":                                   {2000, 2048},
		"256 CPUs is the kernel maximum":           {256000, 262144},
		"300 CPUs is clamped":                      {300000, 262144},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := CPUShares(tc.milli); got != tc.want {
				t.Errorf("CPUShares(%d) = %d, want %d", tc.milli, got, tc.want)
			}
		})
	}
}

func TestCPUWeight(t *testing.T) {
	cases := map[string]struct {
		shares, want uint64
	}{
		"minimum shares → weight 1":         {2, 1},
		"below minimum clamps":              {0, 1},
		"100m → 102 shares → 4":             {102, 4},
		"500m → 512 shares → 20":            {512, 20},
		"1 CPU → 1024 shares → 39":          {1024, 39},
		"2 CPUs → 2048 shares → 79":         {2048, 79},
		"4096 shares → 157":                 {4096, 157},
		"maximum shares → weight 10000":     {262144, 10000},
		"above maximum clamps to 10000":     {1 << 20, 10000},
		"one below maximum stays below max": {262143, 9999},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := CPUWeight(tc.shares); got != tc.want {
				t.Errorf("CPUWeight(%d) = %d, want %d", tc.shares, got, tc.want)
			}
		})
	}
}

func TestCPUQuota(t *testing.T) {
	cases := map[string]struct {
		milli  int64
		period time.Duration
		want   int64
	}{
		"1 CPU, 100ms period": {1000, 100 * time.Millisecond, 100000},
		"500m, 100ms":         {500, 100 * time.Millisecond, 50000},
		"2.5 CPUs, 100ms":     {2500, 100 * time.Millisecond, 250000},
		"250m, 50ms period":   {250, 50 * time.Millisecond, 12500},
		"1 CPU, 1s period":    {1000, time.Second, 1000000},
		"5m would be 500µs: raised to the 1ms minimum": {5, 100 * time.Millisecond, 1000},
		"10m, 100ms is exactly the minimum":            {10, 100 * time.Millisecond, 1000},
		"no limit":                                     {0, 100 * time.Millisecond, NoLimit},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := CPUQuota(tc.milli, tc.period); got != tc.want {
				t.Errorf("CPUQuota(%d, %v) = %d, want %d", tc.milli, tc.period, got, tc.want)
			}
		})
	}
}

func TestMemoryHigh(t *testing.T) {
	cases := map[string]struct {
		request, limit int64
		factor         float64
		page           int64
		want           int64
	}{
		// 128Mi + 0.9·128Mi = 255013683.2 B = 62259.2 pages → 62259 pages.
		"128Mi request, 256Mi limit, 0.9": {128 * qosMiB, 256 * qosMiB, 0.9, 4096, 255012864},
		// 1e8 + 0.9·1e8 = 1.9e8 B = 46386.7 pages → 46386 pages.
		"decimal quantities round down to a page": {100e6, 200e6, 0.9, 4096, 189997056},
		"no request, 8Gi allocatable, 0.9":        {0, 8 * qosGiB, 0.9, 4096, 7730937856},
		"64Mi request, 4Gi, 0.8":                  {64 * qosMiB, 4 * qosGiB, 0.8, 4096, 3449393152},
		"64Mi request, 4Gi, 0.8, 64KiB pages":     {64 * qosMiB, 4 * qosGiB, 0.8, 65536, 3449356288},
		"factor 1 gives the limit":                {64 * qosMiB, 256 * qosMiB, 1, 4096, 256 * qosMiB},
		"request equals limit":                    {64 * qosMiB, 64 * qosMiB, 0.9, 4096, 64 * qosMiB},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := MemoryHigh(tc.request, tc.limit, tc.factor, tc.page); got != tc.want {
				t.Errorf("MemoryHigh(%d, %d, %v, %d) = %d, want %d", tc.request, tc.limit, tc.factor, tc.page, got, tc.want)
			}
		})
	}
}

func TestV2Formats(t *testing.T) {
	cases := map[string]struct{ got, want string }{
		"cpu.max with a quota":     {CPUMax(100000, 100000), "100000 100000"},
		"cpu.max 1.5 CPUs in 50ms": {CPUMax(75000, 50000), "75000 50000"},
		"cpu.max without a quota":  {CPUMax(NoLimit, 100000), "max 100000"},
		"memory.max":               {V2Limit(256 * qosMiB), "268435456"},
		"memory.max unlimited":     {V2Limit(NoLimit), "max"},
		"pids.max":                 {V2Limit(1024), "1024"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

// testQoSConfig: 4 CPUs, 8Gi and 4096 pids allocatable, enforced; kubelet
// defaults otherwise; 4KiB pages.
func testQoSConfig() QoSConfig {
	return QoSConfig{
		Allocatable:            NodeAllocatable{MilliCPU: 4000, MemoryBytes: 8 * qosGiB, Pids: 4096},
		EnforceAllocatable:     true,
		CPUCFSQuotaPeriod:      100 * time.Millisecond,
		PodPidsLimit:           -1,
		MemoryThrottlingFactor: 0.9,
		PageSize:               4096,
	}
}

// tiered is c with memoryReservationPolicy TieredReservation.
func tiered(c QoSConfig) QoSConfig {
	c.TieredReservation = true
	return c
}

func TestComputeQoSSettings(t *testing.T) {
	pods := []PodResources{
		{UID: "g1", QOS: Guaranteed, CPURequestMilli: 1000, CPULimitMilli: 1000, MemoryRequestBytes: 256 * qosMiB, MemoryLimitBytes: 256 * qosMiB, AllCPULimits: true, AllMemoryLimits: true},
		{UID: "b1", QOS: Burstable, CPURequestMilli: 500, MemoryRequestBytes: 128 * qosMiB},
		{UID: "b2", QOS: Burstable, CPURequestMilli: 250, CPULimitMilli: 1000, MemoryRequestBytes: 64 * qosMiB, MemoryLimitBytes: 512 * qosMiB, AllCPULimits: true, AllMemoryLimits: true},
		{UID: "e1", QOS: BestEffort},
	}
	unl := CgroupSettings{CPUShares: 2, CPUQuota: NoLimit, CPUPeriod: 100000, MemoryLimit: NoLimit, PidsLimit: NoLimit, MemoryHigh: NoLimit}
	with := func(s CgroupSettings, f func(*CgroupSettings)) CgroupSettings { f(&s); return s }
	cases := map[string]struct {
		cfg  QoSConfig
		pods []PodResources
		want QoSSettings
	}{
		"no pods": {
			cfg: testQoSConfig(),
			want: QoSSettings{
				// 4000m → 4096 shares; allocatable memory and pids enforced.
				Kubepods:   with(unl, func(s *CgroupSettings) { s.CPUShares = 4096; s.MemoryLimit = 8 * qosGiB; s.PidsLimit = 4096 }),
				Burstable:  unl,
				BestEffort: unl,
			},
		},
		"one pod of each class, reservation policy None: no memory protection": {
			cfg:  testQoSConfig(),
			pods: pods,
			want: QoSSettings{
				Kubepods: with(unl, func(s *CgroupSettings) { s.CPUShares = 4096; s.MemoryLimit = 8 * qosGiB; s.PidsLimit = 4096 }),
				// 500m + 250m = 750m → 768 shares.
				Burstable:  with(unl, func(s *CgroupSettings) { s.CPUShares = 768 }),
				BestEffort: unl,
			},
		},
		"one pod of each class, TieredReservation": {
			cfg:  tiered(testQoSConfig()),
			pods: pods,
			want: QoSSettings{
				// memory.min of kubepods covers Guaranteed + Burstable requests:
				// 256+128+64 Mi; memory.low the Burstable ones, 128+64 Mi.
				Kubepods: with(unl, func(s *CgroupSettings) {
					s.CPUShares = 4096
					s.MemoryLimit = 8 * qosGiB
					s.PidsLimit = 4096
					s.MemoryMin = 448 * qosMiB
					s.MemoryLow = 192 * qosMiB
				}),
				Burstable:  with(unl, func(s *CgroupSettings) { s.CPUShares = 768; s.MemoryLow = 192 * qosMiB }),
				BestEffort: unl,
			},
		},
		"allocatable not enforced: no kubepods limits": {
			cfg:  func() QoSConfig { c := tiered(testQoSConfig()); c.EnforceAllocatable = false; return c }(),
			pods: pods[:1],
			want: QoSSettings{
				Kubepods:   with(unl, func(s *CgroupSettings) { s.CPUShares = 4096; s.MemoryMin = 256 * qosMiB }),
				Burstable:  unl,
				BestEffort: unl,
			},
		},
		"50ms period, unknown pids allocatable": {
			cfg: func() QoSConfig {
				c := testQoSConfig()
				c.CPUCFSQuotaPeriod = 50 * time.Millisecond
				c.Allocatable.Pids = 0
				return c
			}(),
			want: QoSSettings{
				Kubepods:   with(unl, func(s *CgroupSettings) { s.CPUShares = 4096; s.CPUPeriod = 50000; s.MemoryLimit = 8 * qosGiB }),
				Burstable:  with(unl, func(s *CgroupSettings) { s.CPUPeriod = 50000 }),
				BestEffort: with(unl, func(s *CgroupSettings) { s.CPUPeriod = 50000 }),
			},
		},
		"burstable requests below 2 shares keep the minimum": {
			cfg:  tiered(testQoSConfig()),
			pods: []PodResources{{UID: "tiny", QOS: Burstable, CPURequestMilli: 1, MemoryRequestBytes: 1}},
			want: QoSSettings{
				Kubepods: with(unl, func(s *CgroupSettings) {
					s.CPUShares = 4096
					s.MemoryLimit = 8 * qosGiB
					s.PidsLimit = 4096
					s.MemoryMin = 1
					s.MemoryLow = 1
				}),
				Burstable:  with(unl, func(s *CgroupSettings) { s.MemoryLow = 1 }),
				BestEffort: unl,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ComputeQoSSettings(tc.cfg, tc.pods)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n %+v\nwant\n %+v", got, tc.want)
			}
			for _, s := range []CgroupSettings{got.Kubepods, got.Burstable, got.BestEffort} {
				if err := s.Validate(); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func TestComputePodSettings(t *testing.T) {
	cfg := testQoSConfig()
	cases := map[string]struct {
		cfg  QoSConfig
		pod  PodResources
		want CgroupSettings
	}{
		"Guaranteed 1 CPU 256Mi: quota, limit, no memory QoS under policy None": {
			cfg: cfg,
			pod: PodResources{QOS: Guaranteed, CPURequestMilli: 1000, CPULimitMilli: 1000, MemoryRequestBytes: 256 * qosMiB, MemoryLimitBytes: 256 * qosMiB, AllCPULimits: true, AllMemoryLimits: true},
			want: CgroupSettings{CPUShares: 1024, CPUQuota: 100000, CPUPeriod: 100000, MemoryLimit: 256 * qosMiB, PidsLimit: NoLimit,
				MemoryHigh: NoLimit},
		},
		"Guaranteed under TieredReservation: memory.min = request": {
			cfg: tiered(cfg),
			pod: PodResources{QOS: Guaranteed, CPURequestMilli: 1000, CPULimitMilli: 1000, MemoryRequestBytes: 256 * qosMiB, MemoryLimitBytes: 256 * qosMiB, AllCPULimits: true, AllMemoryLimits: true},
			want: CgroupSettings{CPUShares: 1024, CPUQuota: 100000, CPUPeriod: 100000, MemoryLimit: 256 * qosMiB, PidsLimit: NoLimit,
				MemoryMin: 256 * qosMiB, MemoryHigh: NoLimit},
		},
		"Burstable under TieredReservation: memory.low = request; no pod-level resources, no memory.high": {
			cfg: tiered(cfg),
			pod: PodResources{QOS: Burstable, CPURequestMilli: 500, CPULimitMilli: 1500, MemoryRequestBytes: 128 * qosMiB, MemoryLimitBytes: 256 * qosMiB, AllCPULimits: true, AllMemoryLimits: true},
			want: CgroupSettings{CPUShares: 512, CPUQuota: 150000, CPUPeriod: 100000, MemoryLimit: 256 * qosMiB, PidsLimit: NoLimit,
				MemoryLow: 128 * qosMiB, MemoryHigh: NoLimit},
		},
		"Burstable with pod-level resources and a memory limit: memory.high between request and limit": {
			cfg: cfg,
			// 128Mi + 0.9·128Mi = 255013683.2 B → 62259 pages.
			pod: PodResources{QOS: Burstable, CPURequestMilli: 500, CPULimitMilli: 1500, MemoryRequestBytes: 128 * qosMiB, MemoryLimitBytes: 256 * qosMiB, AllCPULimits: true, AllMemoryLimits: true, PodLevelResources: true},
			want: CgroupSettings{CPUShares: 512, CPUQuota: 150000, CPUPeriod: 100000, MemoryLimit: 256 * qosMiB, PidsLimit: NoLimit,
				MemoryHigh: 255012864},
		},
		"pod-level resources without a memory limit: no memory.high (no allocatable fallback at pod level)": {
			cfg: cfg,
			pod: PodResources{QOS: Burstable, CPURequestMilli: 500, MemoryRequestBytes: 128 * qosMiB, PodLevelResources: true},
			want: CgroupSettings{CPUShares: 512, CPUQuota: NoLimit, CPUPeriod: 100000, MemoryLimit: NoLimit, PidsLimit: NoLimit,
				MemoryHigh: NoLimit},
		},
		"pod-level resources, no throttling factor (kubelet's default): no memory.high": {
			cfg: func() QoSConfig { c := cfg; c.MemoryThrottlingFactor = 0; return c }(),
			pod: PodResources{QOS: Burstable, CPURequestMilli: 500, MemoryRequestBytes: 128 * qosMiB, MemoryLimitBytes: 256 * qosMiB, AllMemoryLimits: true, PodLevelResources: true},
			want: CgroupSettings{CPUShares: 512, CPUQuota: NoLimit, CPUPeriod: 100000, MemoryLimit: 256 * qosMiB, PidsLimit: NoLimit,
				MemoryHigh: NoLimit},
		},
		"Guaranteed pod-level resources: request equals limit, no memory.high": {
			cfg: tiered(cfg),
			pod: PodResources{QOS: Guaranteed, CPURequestMilli: 1000, CPULimitMilli: 1000, MemoryRequestBytes: 64 * qosMiB, MemoryLimitBytes: 64 * qosMiB, AllCPULimits: true, AllMemoryLimits: true, PodLevelResources: true},
			want: CgroupSettings{CPUShares: 1024, CPUQuota: 100000, CPUPeriod: 100000, MemoryLimit: 64 * qosMiB, PidsLimit: NoLimit,
				MemoryMin: 64 * qosMiB, MemoryHigh: NoLimit},
		},
		"Burstable where one container lacks limits: no quota, no memory limit": {
			cfg: tiered(cfg),
			pod: PodResources{QOS: Burstable, CPURequestMilli: 500, CPULimitMilli: 1000, MemoryRequestBytes: 128 * qosMiB, MemoryLimitBytes: 256 * qosMiB},
			want: CgroupSettings{CPUShares: 512, CPUQuota: NoLimit, CPUPeriod: 100000, MemoryLimit: NoLimit, PidsLimit: NoLimit,
				MemoryLow: 128 * qosMiB, MemoryHigh: NoLimit},
		},
		"BestEffort: minimum shares, nothing protected": {
			cfg: tiered(cfg),
			pod: PodResources{QOS: BestEffort},
			want: CgroupSettings{CPUShares: 2, CPUQuota: NoLimit, CPUPeriod: 100000, MemoryLimit: NoLimit, PidsLimit: NoLimit,
				MemoryHigh: NoLimit},
		},
		"podPidsLimit and a 50ms period": {
			cfg: func() QoSConfig {
				c := cfg
				c.PodPidsLimit = 1024
				c.CPUCFSQuotaPeriod = 50 * time.Millisecond
				return c
			}(),
			pod: PodResources{QOS: Guaranteed, CPURequestMilli: 250, CPULimitMilli: 250, MemoryRequestBytes: 32 * qosMiB, MemoryLimitBytes: 32 * qosMiB, AllCPULimits: true, AllMemoryLimits: true},
			want: CgroupSettings{CPUShares: 256, CPUQuota: 12500, CPUPeriod: 50000, MemoryLimit: 32 * qosMiB, PidsLimit: 1024,
				MemoryHigh: NoLimit},
		},
		"tiny cpu limit: quota raised to 1ms": {
			cfg: cfg,
			pod: PodResources{QOS: Burstable, CPURequestMilli: 1, CPULimitMilli: 5, AllCPULimits: true},
			want: CgroupSettings{CPUShares: 2, CPUQuota: 1000, CPUPeriod: 100000, MemoryLimit: NoLimit, PidsLimit: NoLimit,
				MemoryHigh: NoLimit},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ComputePodSettings(tc.cfg, tc.pod)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n %+v\nwant\n %+v", got, tc.want)
			}
			if err := got.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestPodMemoryHigh(t *testing.T) {
	cases := map[string]struct {
		request, limit int64
		want           int64
	}{
		"request and limit":                 {128 * qosMiB, 256 * qosMiB, 255012864},
		"no request: factor of the limit":   {0, 256 * qosMiB, 241590272},
		"no limit":                          {128 * qosMiB, 0, NoLimit},
		"request equals limit":              {64 * qosMiB, 64 * qosMiB, NoLimit},
		"limit below request (invalid pod)": {256 * qosMiB, 128 * qosMiB, NoLimit},
		"rounds to the request: not above":  {4096, 4096 + 100, NoLimit},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := PodMemoryHigh(tc.request, tc.limit, 0.9, 4096); got != tc.want {
				t.Errorf("PodMemoryHigh(%d, %d) = %d, want %d", tc.request, tc.limit, got, tc.want)
			}
		})
	}
}

func TestCgroupNames(t *testing.T) {
	cases := map[string]struct{ got, want string }{
		"kubepods at /":                 {KubepodsCgroup("/"), "/kubepods"},
		"kubepods under a root":         {KubepodsCgroup("/kltest-qos"), "/kltest-qos/kubepods"},
		"Guaranteed is kubepods":        {QoSCgroup("/", Guaranteed), "/kubepods"},
		"burstable":                     {QoSCgroup("/", Burstable), "/kubepods/burstable"},
		"besteffort":                    {QoSCgroup("/r", BestEffort), "/r/kubepods/besteffort"},
		"Guaranteed pod under kubepods": {PodCgroup("/", Guaranteed, "1234-ab"), "/kubepods/pod1234-ab"},
		"Burstable pod":                 {PodCgroup("/", Burstable, "u1"), "/kubepods/burstable/podu1"},
		"BestEffort pod under a root":   {PodCgroup("/a/b", BestEffort, "u2"), "/a/b/kubepods/besteffort/podu2"},
		"root without a leading slash":  {KubepodsCgroup("r"), "/r/kubepods"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	good := ComputePodSettings(testQoSConfig(), PodResources{QOS: BestEffort})
	settings := map[string]struct {
		mutate func(*CgroupSettings)
		want   string // substring of the error, "" for valid
	}{
		"computed settings are valid": {func(*CgroupSettings) {}, ""},
		"zero shares":                 {func(s *CgroupSettings) { s.CPUShares = 0 }, "cpu shares 0"},
		"zero period":                 {func(s *CgroupSettings) { s.CPUPeriod = 0 }, "cpu period 0"},
		"quota below 1ms":             {func(s *CgroupSettings) { s.CPUQuota = 999 }, "cpu quota 999"},
		"zero memory limit":           {func(s *CgroupSettings) { s.MemoryLimit = 0 }, "memory limit 0"},
		"zero pids limit":             {func(s *CgroupSettings) { s.PidsLimit = 0 }, "pids limit 0"},
		"negative memory.min":         {func(s *CgroupSettings) { s.MemoryMin = -1 }, "memory.min -1"},
		"negative memory.low":         {func(s *CgroupSettings) { s.MemoryLow = -1 }, "memory.low -1"},
		"zero memory.high":            {func(s *CgroupSettings) { s.MemoryHigh = 0 }, "memory.high 0"},
	}
	for name, tc := range settings {
		t.Run("settings/"+name, func(t *testing.T) {
			s := good
			tc.mutate(&s)
			qosCheckErr(t, s.Validate(), tc.want)
		})
	}
	configs := map[string]struct {
		mutate func(*QoSConfig)
		want   string
	}{
		"defaults are valid":    {func(*QoSConfig) {}, ""},
		"period below 1ms":      {func(c *QoSConfig) { c.CPUCFSQuotaPeriod = time.Microsecond }, "period"},
		"period above 1s":       {func(c *QoSConfig) { c.CPUCFSQuotaPeriod = 2 * time.Second }, "period"},
		"factor 0 is unset":     {func(c *QoSConfig) { c.MemoryThrottlingFactor = 0 }, ""},
		"negative factor":       {func(c *QoSConfig) { c.MemoryThrottlingFactor = -0.5 }, "factor"},
		"factor above 1":        {func(c *QoSConfig) { c.MemoryThrottlingFactor = 1.5 }, "factor"},
		"page size not a power": {func(c *QoSConfig) { c.PageSize = 3000 }, "page size"},
		"page size missing":     {func(c *QoSConfig) { c.PageSize = 0 }, "page size"},
		"negative allocatable":  {func(c *QoSConfig) { c.Allocatable.MemoryBytes = -1 }, "allocatable"},
	}
	for name, tc := range configs {
		t.Run("config/"+name, func(t *testing.T) {
			c := testQoSConfig()
			tc.mutate(&c)
			qosCheckErr(t, c.Validate(), tc.want)
		})
	}
}

func qosCheckErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Errorf("no error, want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("error %q does not contain %q", err, want)
	}
}

func TestQOSClassString(t *testing.T) {
	for c, want := range map[QOSClass]string{Guaranteed: "Guaranteed", Burstable: "Burstable", BestEffort: "BestEffort", 0: "QOSClass(0)"} {
		if got := c.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(c), got, want)
		}
	}
}

// Pod cgroups get a hugetlb limit per page size of the node (the pod's
// request, 0 for the others); kubepods the allocatable when enforced;
// without page sizes none is written. Names are the controller's.
func TestHugePageSettings(t *testing.T) {
	cfg := QoSConfig{CPUCFSQuotaPeriod: 100 * time.Millisecond, PageSize: 4096, EnforceAllocatable: true,
		HugePageSizes: []int64{2 << 20, 1 << 30}, Allocatable: NodeAllocatable{HugePages: map[int64]int64{2 << 20: 8 << 20}}}
	s := ComputePodSettings(cfg, PodResources{QOS: Guaranteed, HugePages: map[int64]int64{2 << 20: 4 << 20}})
	if want := map[int64]int64{2 << 20: 4 << 20, 1 << 30: 0}; !reflect.DeepEqual(s.HugePageLimits, want) {
		t.Errorf("pod hugetlb = %v, want %v", s.HugePageLimits, want)
	}
	q := ComputeQoSSettings(cfg, nil)
	if want := map[int64]int64{2 << 20: 8 << 20, 1 << 30: 0}; !reflect.DeepEqual(q.Kubepods.HugePageLimits, want) || q.Burstable.HugePageLimits != nil {
		t.Errorf("kubepods hugetlb = %v, burstable %v; want %v and none", q.Kubepods.HugePageLimits, q.Burstable.HugePageLimits, want)
	}
	w := WidenSettings(ComputePodSettings(cfg, PodResources{QOS: Guaranteed, HugePages: map[int64]int64{1 << 30: 1 << 30}}), s)
	if want := map[int64]int64{2 << 20: 4 << 20, 1 << 30: 1 << 30}; !reflect.DeepEqual(w.HugePageLimits, want) {
		t.Errorf("widened = %v, want %v", w.HugePageLimits, want)
	}
	cfg.HugePageSizes = nil
	if s := ComputePodSettings(cfg, PodResources{QOS: Guaranteed, HugePages: map[int64]int64{2 << 20: 4 << 20}}); s.HugePageLimits != nil {
		t.Errorf("no page sizes: hugetlb %v, want none", s.HugePageLimits)
	}
	for size, want := range map[int64]string{2 << 20: "2MB", 1 << 30: "1GB", 64 << 10: "64KB", 16 << 30: "16GB", 3000: "3000B"} {
		if got := HugePageSizeName(size); got != want {
			t.Errorf("HugePageSizeName(%d) = %q, want %q", size, got, want)
		}
	}
}
