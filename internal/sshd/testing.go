package sshd

import (
	"context"
	"errors"
	"os"
	"testing"
)

// Require starts a server for the test t and stops it at its end. Where sshd
// is not installed it skips t, but under CI=true, where it fails t: CI
// installs it (hack/setup.sh), so a test that skipped there would test
// nothing.
func Require(t testing.TB, o Options) *Server {
	t.Helper()
	if _, err := Binary(); errors.Is(err, ErrNotInstalled) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	s, err := Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}
