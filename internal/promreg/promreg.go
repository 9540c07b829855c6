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
