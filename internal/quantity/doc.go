// Package quantity parses resource quantities ("100Mi", "1.5", "2e9") from
// input kernelet does not control — configuration files, eviction maps,
// static pod manifests — without the unbounded cost of apimachinery's
// resource.ParseQuantity on extreme exponents: "1e-2000000000" makes it
// build a number of two billion digits (minutes of CPU and gigabytes of
// memory) before rounding it to 1n. Quantities past MaxLength characters
// or with a decimal exponent outside ±MaxExponent are refused up front.
package quantity
