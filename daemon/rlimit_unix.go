//go:build unix

package daemon

import "syscall"

// openFilesLimit is the process's soft RLIMIT_NOFILE, or 0 when unknown.
func openFilesLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<30 {
		return 0
	}
	return int(r.Cur)
}
