//go:build unix && !linux

package controlplane

import "syscall"

// sysProcAttr puts every long-running child in its own process group. Outside
// Linux there is no parent-death signal: a parent killed with SIGKILL can leave
// strays behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

func helperProcAttr() *syscall.SysProcAttr { return nil }
