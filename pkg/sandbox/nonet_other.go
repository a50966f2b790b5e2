//go:build !linux

package sandbox

import "errors"

// denyNetwork is not built off Linux: only the backstop of net/http holds.
func denyNetwork() error {
	return errors.New("the network filter of render processes is built for Linux only")
}

// probeNetwork says that the filter is not built here.
func probeNetwork(filterErr error) probeAnswer { return probeAnswer{Why: filterErr.Error()} }
