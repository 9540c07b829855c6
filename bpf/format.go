package bpf

import (
	"fmt"
	"strconv"
	"strings"
)

// tpField is one field of a tracepoint record, from the tracepoint's
// tracefs "format" file.
type tpField struct {
	Name    string
	Type    string // as written, e.g. "unsigned long", "char[16]", "__data_loc char[]"
	Offset  int
	Size    int
	Signed  bool
	DataLoc bool // a __data_loc field: u32 offset (low 16 bits) and length of dynamic data
	Array   int  // the element count of an array field, else 0
}

// tpFormat is a parsed tracefs events/<group>/<name>/format file.
type tpFormat struct {
	Name   string
	ID     int
	Fields map[string]tpField
}

// parseTracepointFormat parses a format file:
//
//	name: mark_victim
//	ID: 512
//	format:
//		field:unsigned short common_type;	offset:0;	size:2;	signed:0;
//		...
//		field:int pid;	offset:8;	size:4;	signed:1;
//		field:__data_loc char[] comm;	offset:12;	size:4;	signed:0;
//
//	print fmt: ...
func parseTracepointFormat(s string) (tpFormat, error) {
	f := tpFormat{Fields: map[string]tpField{}}
	haveID := false
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "name:"):
			f.Name = strings.TrimSpace(strings.TrimPrefix(line, "name:"))
		case strings.HasPrefix(line, "ID:"):
			id, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "ID:")))
			if err != nil {
				return tpFormat{}, fmt.Errorf("tracepoint format: bad ID line %q", line)
			}
			f.ID, haveID = id, true
		case strings.HasPrefix(line, "field:"):
			fd, err := parseFormatField(line)
			if err != nil {
				return tpFormat{}, err
			}
			f.Fields[fd.Name] = fd
		}
	}
	if !haveID {
		return tpFormat{}, fmt.Errorf("tracepoint format %q: no ID line", f.Name)
	}
	if len(f.Fields) == 0 {
		return tpFormat{}, fmt.Errorf("tracepoint format %q: no fields", f.Name)
	}
	return f, nil
}

func parseFormatField(line string) (tpField, error) {
	var fd tpField
	var decl string
	haveOff, haveSize := false, false
	for part := range strings.SplitSeq(line, ";") {
		part = strings.TrimSpace(part)
		key, val, ok := strings.Cut(part, ":")
		if !ok {
			continue
		}
		var err error
		switch key {
		case "field":
			decl = strings.TrimSpace(val)
		case "offset":
			fd.Offset, err = strconv.Atoi(val)
			haveOff = true
		case "size":
			fd.Size, err = strconv.Atoi(val)
			haveSize = true
		case "signed":
			fd.Signed = val == "1"
		}
		if err != nil {
			return tpField{}, fmt.Errorf("tracepoint format: bad %s in %q", key, line)
		}
	}
	if decl == "" || !haveOff || !haveSize || fd.Offset < 0 || fd.Size < 0 {
		return tpField{}, fmt.Errorf("tracepoint format: bad field line %q", line)
	}
	// "TYPE NAME" or "TYPE NAME[N]"; the name is the last word.
	i := strings.LastIndexAny(decl, " \t*")
	if i < 0 || i == len(decl)-1 {
		return tpField{}, fmt.Errorf("tracepoint format: no field name in %q", line)
	}
	fd.Type, fd.Name = strings.TrimSpace(decl[:i+1]), decl[i+1:]
	if name, dim, ok := strings.Cut(fd.Name, "["); ok {
		fd.Name = name
		n, err := strconv.Atoi(strings.TrimSuffix(dim, "]"))
		if err == nil {
			fd.Array = n
		}
		fd.Type += "[" + dim
	}
	if strings.HasPrefix(fd.Type, "__data_loc") {
		fd.DataLoc = true
	}
	return fd, nil
}

// layoutField returns where field name is when its size is one of sizes
// (an integer field the C side reads), or ok=false.
func (f tpFormat) layoutField(name string, sizes ...int) (off, size uint16, ok bool) {
	fd, found := f.Fields[name]
	if !found || fd.DataLoc || fd.Array != 0 || fd.Offset > 0xffff {
		return 0, 0, false
	}
	for _, s := range sizes {
		if fd.Size == s {
			return uint16(fd.Offset), uint16(fd.Size), true
		}
	}
	return 0, 0, false
}

// stringField returns where the string field name is: a __data_loc
// string, or a char array of at least minLen bytes.
func (f tpFormat) stringField(name string, minLen int) (off uint16, dataLoc, ok bool) {
	fd, found := f.Fields[name]
	if !found || fd.Offset > 0xffff {
		return 0, false, false
	}
	if fd.DataLoc && fd.Size == 4 {
		return uint16(fd.Offset), true, true
	}
	if fd.Array >= minLen && fd.Size >= minLen {
		return uint16(fd.Offset), false, true
	}
	return 0, false, false
}
