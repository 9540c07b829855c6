package node

import (
	"fmt"
	"os"
	goruntime "runtime"
	"strings"
	"testing"
)

func TestReadMachine(t *testing.T) {
	for name, tc := range map[string]struct {
		root    string
		want    Machine
		wantErr string
	}{
		"full": {root: "testdata/full", want: Machine{
			MachineID: "0123456789abcdef0123456789abcdef", BootID: "4b1c2d3e-aaaa-bbbb-cccc-0123456789ab",
			SystemUUID: "EC2A1B2C-0000-1111-2222-333344445555", KernelVersion: "6.8.0-49-generic",
			OSImage: "Ubuntu 24.04.1 LTS", CPUs: 7, MemoryBytes: 8148472 * 1024, SwapBytes: 2097148 * 1024,
			HugePages: map[int64]int64{2 << 20: 512, 1 << 30: 0}}},
		"minimal: dbus machine-id, lib os-release, no dmi, no huge pages": {root: "testdata/minimal", want: Machine{
			MachineID: "dbusid", OSImage: "Alpine Linux v3.20", CPUs: goruntime.NumCPU(), MemoryBytes: 1024 * 1024}},
		"no meminfo": {root: "testdata/nomem", want: Machine{OSImage: "Linux", CPUs: goruntime.NumCPU()},
			wantErr: "memory capacity"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ReadMachine(MachineFiles{Root: tc.root})
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			tc.want.OperatingSystem, tc.want.Architecture = goruntime.GOOS, goruntime.GOARCH
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tc.want) {
				t.Errorf("ReadMachine =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestReadMachineHost(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("reads a Linux host")
	}
	m, err := ReadMachine(MachineFiles{Root: "/", RootDir: os.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if m.CPUs < 1 || m.MemoryBytes <= 0 || m.EphemeralStorageBytes <= 0 || m.BootID == "" || m.KernelVersion == "" || m.OSImage == "" {
		t.Errorf("host machine = %+v", m)
	}
	t.Logf("host: %+v", m)
}
