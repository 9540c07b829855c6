package prober

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestStateNext(t *testing.T) {
	t0 := time.Unix(1000, 0)
	probe := &v1.Probe{InitialDelaySeconds: 5}
	base := Tick{ContainerID: "c1", Running: true, StartedAt: t0, Now: t0.Add(10 * time.Second), Started: true}
	for name, tc := range map[string]struct {
		kind    Kind
		state   State
		tick    func(Tick) Tick
		step    Step
		reset   bool
		publish Result
	}{
		"no container":              {kind: Liveness, tick: func(t Tick) Tick { t.ContainerID = ""; return t }, step: StepWait},
		"new container":             {kind: Liveness, state: State{ContainerID: "old", OnHold: true}, step: StepProbe, reset: true},
		"on hold":                   {kind: Liveness, state: State{ContainerID: "c1", OnHold: true}, step: StepWait},
		"not running":               {kind: Readiness, state: State{ContainerID: "c1"}, tick: func(t Tick) Tick { t.Running = false; return t }, step: StepWait},
		"exited, never":             {kind: Readiness, state: State{ContainerID: "c1"}, tick: func(t Tick) Tick { t.Running, t.Exited, t.Final = false, true, true; return t }, step: StepStop},
		"created, never":            {kind: Readiness, state: State{ContainerID: "c1"}, tick: func(t Tick) Tick { t.Running, t.Final = false, true; return t }, step: StepWait},
		"deleting liveness":         {kind: Liveness, state: State{ContainerID: "c1"}, tick: func(t Tick) Tick { t.Deleting = true; return t }, step: StepStop, publish: Success},
		"deleting readiness probes": {kind: Readiness, state: State{ContainerID: "c1"}, tick: func(t Tick) Tick { t.Deleting = true; return t }, step: StepProbe},
		"initial delay":             {kind: Readiness, state: State{ContainerID: "c1"}, tick: func(t Tick) Tick { t.Now = t0.Add(4 * time.Second); return t }, step: StepWait},
		"liveness before started":   {kind: Liveness, state: State{ContainerID: "c1"}, tick: func(t Tick) Tick { t.Started = false; return t }, step: StepWait},
		"startup before started":    {kind: Startup, state: State{ContainerID: "c1"}, tick: func(t Tick) Tick { t.Started = false; return t }, step: StepProbe},
		"startup once started":      {kind: Startup, state: State{ContainerID: "c1"}, step: StepWait},
	} {
		t.Run(name, func(t *testing.T) {
			tick := base
			if tc.tick != nil {
				tick = tc.tick(base)
			}
			s := tc.state
			step, reset, publish := s.Next(tc.kind, probe, tick)
			if step != tc.step || reset != tc.reset || publish != tc.publish {
				t.Fatalf("Next = %v, %v, %v; want %v, %v, %v", step, reset, publish, tc.step, tc.reset, tc.publish)
			}
		})
	}
}

func TestStateRecord(t *testing.T) {
	O, F, U, W := OutcomeSuccess, OutcomeFailure, OutcomeUnknown, OutcomeWarning
	for name, tc := range map[string]struct {
		kind     Kind
		probe    v1.Probe
		outcomes []Outcome
		want     []Result
		hold     bool
	}{
		"defaults: one success":    {kind: Readiness, outcomes: []Outcome{O}, want: []Result{Success}},
		"defaults: three failures": {kind: Readiness, outcomes: []Outcome{F, F, F, F}, want: []Result{Unknown, Unknown, Failure, Failure}},
		"failure streak broken":    {kind: Readiness, outcomes: []Outcome{F, F, O, F, F}, want: []Result{Unknown, Unknown, Success, Unknown, Unknown}},
		"success threshold 2":      {kind: Readiness, probe: v1.Probe{SuccessThreshold: 2, FailureThreshold: 1}, outcomes: []Outcome{O, F, O, W}, want: []Result{Unknown, Failure, Unknown, Success}},
		"unknown thrown away":      {kind: Readiness, probe: v1.Probe{FailureThreshold: 2}, outcomes: []Outcome{F, U, F}, want: []Result{Unknown, Unknown, Failure}},
		"liveness failure holds":   {kind: Liveness, probe: v1.Probe{FailureThreshold: 1}, outcomes: []Outcome{F}, want: []Result{Failure}, hold: true},
		"readiness never holds":    {kind: Readiness, probe: v1.Probe{FailureThreshold: 1}, outcomes: []Outcome{F}, want: []Result{Failure}},
	} {
		t.Run(name, func(t *testing.T) {
			var s State
			for i, o := range tc.outcomes {
				if got := s.Record(tc.kind, &tc.probe, o); got != tc.want[i] {
					t.Fatalf("outcome %d (%v): %v, want %v", i, o, got, tc.want[i])
				}
			}
			if s.OnHold != tc.hold {
				t.Fatalf("OnHold = %v", s.OnHold)
			}
		})
	}
}

func TestStartedReady(t *testing.T) {
	for name, tc := range map[string]struct {
		hasStartup, hasReadiness bool
		startup, readiness       Result
		started, ready           bool
	}{
		"no probes":                 {started: true, ready: true},
		"startup pending":           {hasStartup: true, started: false, ready: false},
		"startup passed":            {hasStartup: true, startup: Success, started: true, ready: true},
		"readiness pending":         {hasReadiness: true, started: true, ready: false},
		"readiness passed":          {hasReadiness: true, readiness: Success, started: true, ready: true},
		"readiness failed":          {hasReadiness: true, readiness: Failure, started: true, ready: false},
		"ready waits for startup":   {hasStartup: true, hasReadiness: true, readiness: Success, started: false, ready: false},
		"startup and readiness met": {hasStartup: true, hasReadiness: true, startup: Success, readiness: Success, started: true, ready: true},
	} {
		t.Run(name, func(t *testing.T) {
			started := Started(tc.hasStartup, tc.startup)
			ready := Ready(started, tc.hasReadiness, tc.readiness)
			if started != tc.started || ready != tc.ready {
				t.Fatalf("started %v ready %v; want %v %v", started, ready, tc.started, tc.ready)
			}
		})
	}
}

func TestMessages(t *testing.T) {
	if got := UnhealthyMessage(Liveness, "HTTP probe failed with statuscode: 500"); got != "Liveness probe failed: HTTP probe failed with statuscode: 500" {
		t.Fatal(got)
	}
	if got := WarningMessage(Readiness, "x"); got != "Readiness probe warning: x" {
		t.Fatal(got)
	}
}
