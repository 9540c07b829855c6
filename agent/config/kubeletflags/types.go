package kubeletflags

// Flag is one flag of kubelet's command line.
type Flag struct {
	Name, Shorthand string
	// Value is how kubelet binds the flag: a pflag type ("bool",
	// "string", "duration", "int32", "int64", "stringSlice"), the
	// flag.Value kubelet makes ("NewMapStringString", "IPVar", ...),
	// "Value" for a field that is its own flag.Value, "goflag" for a
	// flag of Go's flag package and "version" for --version.
	Value string
	// Field is the KubeletConfiguration field the flag sets
	// ("Authentication.X509.ClientCAFile"), "" when it is not one.
	Field string
	// Deprecated is kubelet's deprecation message, "" when not deprecated.
	Deprecated string
}

// Decision is what kernelet does with a kubelet flag that is not a
// configuration field.
type Decision struct {
	// Acted: the command defines the flag itself and acts on it. Not
	// acted: the flag is refused when given with a value that asks for
	// something (a non-empty string, true, any other value).
	Acted bool
	// Why says what kernelet does instead (for a refusal: why not).
	Why string
}
