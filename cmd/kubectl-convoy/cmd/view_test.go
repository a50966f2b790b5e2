package cmd

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestViewValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    viewOptions
		wantErr string
	}{
		{name: "a namespace", opts: viewOptions{}},
		{name: "every namespace", opts: viewOptions{allNamespaces: true}},
		{name: "a Release", opts: viewOptions{name: "web", port: 8765}},
		{name: "a Release of every namespace", opts: viewOptions{name: "web", allNamespaces: true}, wantErr: "give -n, not -A"},
		{name: "not a name", opts: viewOptions{name: "Web/../x"}, wantErr: `"Web/../x" is not a Release name`},
		{name: "not a port", opts: viewOptions{port: 70000}, wantErr: "--port 70000: not a port"},
		{name: "a negative port", opts: viewOptions{port: -1}, wantErr: "not a port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}
