package main

import (
	"strings"
	"testing"
)

// TestCollectFixture reads a cut-down copy of kubelet's flag registration
// (testdata/) as the generator reads the real one.
func TestCollectFixture(t *testing.T) {
	flags, err := collect(sourceDirs{kubernetes: "testdata/k8s", componentBase: "testdata/cb", cadvisor: "testdata/cad"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]kflag{}
	for _, f := range flags {
		got[f.name] = f
	}
	const cfg = "Set it in the config file."
	want := map[string]kflag{
		"kubeconfig":                {name: "kubeconfig", value: "string"},
		"node-labels":               {name: "node-labels", value: "ConfigurationMap"},
		"maximum-dead-containers":   {name: "maximum-dead-containers", value: "int32", deprecated: "Use --eviction-hard instead."},
		"runtime-cgroups":           {name: "runtime-cgroups", value: "string"},
		"enable-server":             {name: "enable-server", value: "bool", field: "EnableServer", deprecated: cfg},
		"address":                   {name: "address", value: "IPVar", field: "Address", deprecated: cfg},
		"sync-frequency":            {name: "sync-frequency", value: "duration", field: "SyncFrequency", deprecated: cfg},
		"system-reserved":           {name: "system-reserved", value: "NewMapStringString", field: "SystemReserved", deprecated: cfg},
		"provider-id":               {name: "provider-id", value: "string", field: "ProviderID"},
		"log-flush-frequency":       {name: "log-flush-frequency", value: "duration", field: "Logging.FlushFrequency.Duration", deprecated: cfg},
		"v":                         {name: "v", shorthand: "v", value: "VerbosityLevelPflag", field: "Logging.Verbosity"},
		"log-json-info-buffer-size": {name: "log-json-info-buffer-size", value: "Value", field: "Logging.Options.JSON.InfoBufferSize", deprecated: cfg},
		"housekeeping-interval":     {name: "housekeeping-interval", value: "goflag"},
		"version":                   {name: "version", value: "version"},
		"help":                      {name: "help", shorthand: "h", value: "bool"},
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("--%s: got %+v, want %+v", name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d flags, want %d: %v", len(got), len(want), got)
	}
	src, err := render(flags)
	if err != nil || !strings.Contains(string(src), `{Name: "v", Shorthand: "v", Value: "VerbosityLevelPflag", Field: "Logging.Verbosity"},`) {
		t.Errorf("render: %v\n%s", err, src)
	}
}
