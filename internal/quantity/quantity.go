package quantity

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

const (
	// MaxLength is the longest quantity accepted, in bytes. The longest
	// meaningful one (a 19-digit integer with nine decimals and a suffix)
	// is about half of it.
	MaxLength = 64
	// MaxExponent bounds a decimal exponent ("1e18", "5E-3"): anything
	// past it is far outside what a quantity can hold (±2^63 at nano
	// precision) and only costs time to round.
	MaxExponent = 64
)

// Check reports whether s is too long or carries a decimal exponent past
// ±MaxExponent. It does not otherwise validate s: resource.ParseQuantity
// does, cheaply, once Check has passed.
func Check(s string) error {
	if len(s) > MaxLength {
		return fmt.Errorf("longer than %d characters", MaxLength)
	}
	num := strings.TrimLeft(s, "+-")
	i := strings.IndexFunc(num, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 || (num[i] != 'e' && num[i] != 'E') {
		return nil // no exponent: a plain number or an SI/binary suffix
	}
	digits := strings.TrimLeft(num[i+1:], "+-")
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return nil // not an exponent (e.g. "1Ei"): ParseQuantity decides
	}
	exp, err := strconv.Atoi(num[i+1:])
	if err != nil || exp > MaxExponent || exp < -MaxExponent {
		return fmt.Errorf("exponent %s out of range [-%d, %d]", num[i+1:], MaxExponent, MaxExponent)
	}
	return nil
}

// Parse is resource.ParseQuantity behind Check.
func Parse(s string) (resource.Quantity, error) {
	if err := Check(s); err != nil {
		return resource.Quantity{}, fmt.Errorf("quantity %q: %w", s, err)
	}
	return resource.ParseQuantity(s)
}
