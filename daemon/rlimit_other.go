//go:build !unix

package daemon

// openFilesLimit is 0: unknown on this system.
func openFilesLimit() int { return 0 }
