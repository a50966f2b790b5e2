package sandbox

import (
	"fmt"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/sys/unix"
)

// networkFilter is the seccomp filter of a render process: socket(2) of
// the Internet families (AF_INET, AF_INET6) fails with EPERM, and so does
// io_uring_setup(2), whose rings could create a socket without socket(2)
// (IORING_OP_SOCKET). Everything else is allowed: Unix sockets, files,
// memory, threads. It is installed with no_new_privs, which needs no
// privilege, and on every thread of the process (TSYNC): the Go runtime's
// threads exist before the filter. A socket opened before it (none: the
// child opens none before RunChild) would not be closed by it.
var networkFilter = seccomp.Filter{
	NoNewPrivs: true,
	Flag:       seccomp.FilterFlagTSync,
	Policy: seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{{
			Action: seccomp.ActionErrno,
			NamesWithCondtions: []seccomp.NameWithConditions{{
				Name: "socket",
				Conditions: seccomp.ArgumentConditions{
					{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_INET},
				},
			}, {
				Name: "socket",
				Conditions: seccomp.ArgumentConditions{
					{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_INET6},
				},
			}},
		}, {
			Action: seccomp.ActionErrno,
			Names:  []string{"io_uring_setup"},
		}},
	},
}

// denyNetwork installs networkFilter in this process: from then on the
// kernel refuses it every Internet socket, whatever library asks for one.
// It fails where the kernel has no seccomp filters (or a container's
// profile forbids installing one).
func denyNetwork() error {
	if !seccomp.Supported() {
		return fmt.Errorf("the kernel does not support seccomp filters")
	}
	if err := seccomp.LoadFilter(networkFilter); err != nil {
		return fmt.Errorf("installing the seccomp filter: %w", err)
	}
	return nil
}

// probeNetwork asks for an IPv4 and an IPv6 socket: the answer of a probe
// child (CheckNetworkFilter). With the filter, the kernel refuses both
// with EPERM; filterErr says why the filter is not installed, if it is not.
func probeNetwork(filterErr error) probeAnswer {
	for _, family := range []int{unix.AF_INET, unix.AF_INET6} {
		fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			_ = unix.Close(fd)
		}
		if err != unix.EPERM {
			why := fmt.Sprintf("a socket of family %d was not refused (%v)", family, err)
			if filterErr != nil {
				why = filterErr.Error() + ": " + why
			}
			return probeAnswer{Why: why}
		}
	}
	return probeAnswer{Refused: true}
}
