// Package mountinfo holds what every reader of /proc/<pid>/mountinfo in
// kernelet needs in the same way: undoing the kernel's octal escapes of
// paths. It owns no parsing policy (each reader keeps the fields it needs)
// and must not grow dependencies: production packages and the test
// environment both import it.
package mountinfo
