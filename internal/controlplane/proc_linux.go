//go:build linux

package controlplane

import "syscall"

// sysProcAttr returns the attributes of every long-running child: its own
// process group, so that Stop can signal the child and anything it forked, and
// SIGKILL when the parent dies, so that a killed test or local-up leaves no
// strays. (Pdeathsig fires when the OS thread that forked the child exits; the
// Go runtime does not retire threads unless a goroutine locked to one exits,
// which this package never does.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// helperProcAttr is for short-lived helpers (kubectl): killed with the parent,
// but left in the caller's process group so that Ctrl-C reaches them.
func helperProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
