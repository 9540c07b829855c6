// Package promreg registers a package's collectors with the registry of
// the endpoint that serves them, so that each package that produces
// metrics registers its own. It holds no collector.
package promreg

import (
	"fmt"

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
