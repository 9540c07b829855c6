package promreg

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers cs with reg in order and stops at the first error
// (prometheus' errors name the descriptor that failed).
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	return nil
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// Names returns the sorted family names of c's descriptors (a histogram
// or summary by its base name), also of families with no sample yet.
func Names(c prometheus.Collector) []string {
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	var names []string
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil && !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	slices.Sort(names)
	return names
}
