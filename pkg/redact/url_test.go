package redact

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
)

// URL finds user information where net/url does, also in a
// URL that does not parse.
func TestURL(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		had      bool
	}{
		{in: "https://alice:s3cr3t@charts.example/stable", want: "https://charts.example/stable", had: true},
		{in: "https://alice@charts.example", want: "https://charts.example", had: true},
		{in: "https://:s3cr3t@charts.example/", want: "https://charts.example/", had: true},
		{in: "https://@charts.example/", want: "https://charts.example/", had: true},
		{in: "https://alice:s3@cr3t@charts.example:8443/x", want: "https://charts.example:8443/x", had: true},
		{in: "https://alice:s3cr3t@[::1]:8443", want: "https://[::1]:8443", had: true},
		{in: "https://alice:s3%zzcr3t@charts.example/", want: "https://charts.example/", had: true},
		{in: "oci://alice:s3cr3t@registry.example:5000/charts/web", want: "oci://registry.example:5000/charts/web", had: true},
		{in: "https://charts.example/stable", want: "https://charts.example/stable"},
		{in: "https://charts.example/a@b", want: "https://charts.example/a@b"},
		{in: "https://charts.example?a=b@c", want: "https://charts.example?a=b@c"},
		{in: "https://charts.example#a@b", want: "https://charts.example#a@b"},
		{in: "oci://registry.example/charts/web@sha256:00", want: "oci://registry.example/charts/web@sha256:00"},
		{in: "no slashes@all", want: "no slashes@all"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, had := URL(tc.in)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.had, had)
			if u, err := url.Parse(tc.in); err == nil && u.Scheme != "" {
				assert.Equal(t, u.User != nil, had, "as net/url reads it")
			}
		})
	}
}
