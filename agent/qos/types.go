package qos

// Amounts are cpu and memory amounts in plain units. A zero amount means
// "none" (no request, or no limit).
type Amounts struct {
	// CPUMilli is cpu in milliCPU.
	CPUMilli int64
	// MemoryBytes is memory in bytes.
	MemoryBytes int64
}
