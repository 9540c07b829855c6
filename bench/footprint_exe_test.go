package bench

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exeSections is how much of an agent's executable is resident, by part of
// the binary: the pages of each ELF section present in the process
// (/proc/<pid>/pagemap), whether still file-backed or copied on write.
type exeSections struct {
	size                         int64 // the executable file
	text, rodata, pclntab, data  int64 // resident bytes
	textSize, rodataSize, pclnSz int64 // section sizes
}

// String is one line of the benchmark's report.
func (e exeSections) String() string {
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	return fmt.Sprintf("file %.0f MB; resident MiB (of section size): .text %.1f (%.1f), .rodata+typelinks %.1f (%.1f), .gopclntab %.1f (%.1f), data+bss %.1f",
		float64(e.size)/1e6, mib(e.text), mib(e.textSize), mib(e.rodata), mib(e.rodataSize), mib(e.pclntab), mib(e.pclnSz), mib(e.data))
}

// readExeSections maps the ELF sections of exe onto the address space of
// process pid (with the load bias of a position-independent executable)
// and counts their present pages. Errors leave the result zero.
func readExeSections(pid int, exe string) (exeSections, error) {
	var out exeSections
	if p, err := filepath.EvalSymlinks(exe); err == nil {
		exe = p
	}
	if fi, err := os.Stat(exe); err == nil {
		out.size = fi.Size()
	}
	f, err := elf.Open(exe)
	if err != nil {
		return out, err
	}
	defer f.Close()
	bias, err := loadBias(pid, exe, f)
	if err != nil {
		return out, err
	}
	pm, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		return out, err
	}
	defer pm.Close()
	const page = 4096
	resident := func(addr, size uint64) (int64, error) {
		var n int64
		buf := make([]byte, 8)
		for a := addr &^ (page - 1); a < addr+size; a += page {
			if _, err := pm.ReadAt(buf, int64(a/page*8)); err != nil {
				return 0, fmt.Errorf("pagemap: %w", err)
			}
			// Bit 63: present in RAM; bit 62: swapped.
			if v := binary.LittleEndian.Uint64(buf); v&(1<<63) != 0 || v&(1<<62) != 0 {
				n += page
			}
		}
		return n, nil
	}
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Size == 0 || s.Type == elf.SHT_NOTE || s.Name == ".tbss" {
			continue
		}
		r, err := resident(s.Addr+bias, s.Size)
		if err != nil {
			return out, err
		}
		size := int64(s.Size)
		switch {
		case s.Name == ".text":
			out.text, out.textSize = out.text+r, out.textSize+size
		case s.Name == ".rodata" || s.Name == ".typelink" || s.Name == ".itablink":
			out.rodata, out.rodataSize = out.rodata+r, out.rodataSize+size
		case s.Name == ".gopclntab":
			out.pclntab, out.pclnSz = out.pclntab+r, out.pclnSz+size
		case s.Flags&elf.SHF_WRITE != 0:
			out.data += r
		}
	}
	return out, nil
}

// loadBias is where the process mapped exe minus where the ELF file asks
// for it: 0 for a static, non-PIE executable.
func loadBias(pid int, exe string, f *elf.File) (uint64, error) {
	var first uint64
	found := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && (!found || p.Vaddr < first) {
			first, found = p.Vaddr, true
		}
	}
	maps, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return 0, err
	}
	defer maps.Close()
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		// address perms offset dev inode path
		fl := strings.Fields(sc.Text())
		if len(fl) < 6 || fl[5] != exe || fl[2] != "00000000" {
			continue
		}
		var lo uint64
		if _, err := fmt.Sscanf(fl[0], "%x-", &lo); err != nil {
			return 0, err
		}
		return lo - first&^4095, nil
	}
	return 0, fmt.Errorf("%s is not mapped in process %d", exe, pid)
}

// The test binary's own sections: its code runs, so some of .text and
// .gopclntab is resident, and never more than the section (one page of
// rounding at each end).
func TestReadExeSections(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, err := readExeSections(os.Getpid(), exe)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(s)
	if s.text <= 0 || s.pclntab <= 0 || s.text > s.textSize+2*4096 || s.pclntab > s.pclnSz+2*4096 || s.size <= s.textSize {
		t.Errorf("implausible: %+v", s)
	}
}
