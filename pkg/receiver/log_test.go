package receiver

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/kumodo/convoy-apiserver/pkg/webhook"
)

// The log names the Receiver, never its secret, its path or the body,
// at any verbosity.
func TestLogNamesNoSecret(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(10), ktesting.BufferLogs(true)))
	e := newEnv(t, func(o *Options) { o.PerReceiverBurst, o.PerReceiverQPS = 6, 0.001 })
	send := func(r *http.Request) {
		e.do(r.WithContext(klog.NewContext(r.Context(), logger)))
	}
	secretBody := []byte(`{"ref":"refs/heads/main","repository":{"clone_url":"https://github.com/org/app.git"},"marker":"body-marker-1234"}`)
	send(signed(pathGitHub, webhook.GitHub, "push", "l-1", secretBody, secret))
	send(signed(pathGitHub, webhook.GitHub, "push", "l-2", secretBody, []byte("wrong")))
	send(signed(pathGitHub, webhook.GitHub, "push", "l-3", []byte(`{"body-marker-1234`), secret))
	send(signed(pathGitLab, webhook.GitLab, "Push Hook", "l-4", secretBody, []byte("body-marker-token")))
	e.releases.err = errors.New("list failed")
	send(signed(pathGitHub, webhook.GitHub, "push", "l-5", secretBody, secret))
	e.releases.err = nil
	e.refresher.panics = true
	send(signed(pathGitHub, webhook.GitHub, "push", "l-6", secretBody, secret))
	for range 3 {
		send(signed(pathGitHub, webhook.GitHub, "push", "l-7", secretBody, secret))
	}

	out := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
	assert.Contains(t, out, `receiver="team-a/gh-receiver"`)
	assert.Contains(t, out, "rate limited")
	for _, never := range []string{string(secret), "body-marker", strings.TrimPrefix(pathGitHub, "/hook/"), "wrong"} {
		assert.NotContains(t, out, never)
	}
}
