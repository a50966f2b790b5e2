package receiver

import (
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOptionsValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(o *Options)
		ok     bool
	}{
		{"the defaults: no listener", func(*Options) {}, true},
		{"HTTPS on every address", func(o *Options) { o.BindAddress = ":9443" }, true},
		{"HTTPS on 0.0.0.0", func(o *Options) { o.BindAddress = "0.0.0.0:9443" }, true},
		{"plain HTTP on 127.0.0.1", func(o *Options) { o.BindAddress, o.PlainHTTP = "127.0.0.1:9080", true }, true},
		{"plain HTTP on 127.1.2.3", func(o *Options) { o.BindAddress, o.PlainHTTP = "127.1.2.3:9080", true }, true},
		{"plain HTTP on ::1", func(o *Options) { o.BindAddress, o.PlainHTTP = "[::1]:9080", true }, true},
		{"plain HTTP on localhost", func(o *Options) { o.BindAddress, o.PlainHTTP = "localhost:9080", true }, true},
		{"plain HTTP on 0.0.0.0", func(o *Options) { o.BindAddress, o.PlainHTTP = "0.0.0.0:9080", true }, false},
		{"plain HTTP on every address", func(o *Options) { o.BindAddress, o.PlainHTTP = ":9080", true }, false},
		{"plain HTTP on ::", func(o *Options) { o.BindAddress, o.PlainHTTP = "[::]:9080", true }, false},
		{"plain HTTP on a pod address", func(o *Options) { o.BindAddress, o.PlainHTTP = "10.0.0.7:9080", true }, false},
		{"plain HTTP on a name", func(o *Options) { o.BindAddress, o.PlainHTTP = "localhost.example.com:9080", true }, false},
		{"plain HTTP without a listener", func(o *Options) { o.PlainHTTP = true }, false},
		{"no port", func(o *Options) { o.BindAddress = "127.0.0.1" }, false},
		{"a port out of range", func(o *Options) { o.BindAddress = "127.0.0.1:70000" }, false},
		{"a zero body cap", func(o *Options) { o.MaxBodyBytes = 0 }, false},
		{"a negative QPS", func(o *Options) { o.QPS = -1 }, false},
		{"a zero burst", func(o *Options) { o.Burst = 0 }, false},
		{"a zero per-Receiver QPS", func(o *Options) { o.PerReceiverQPS = 0 }, false},
		{"a zero per-Receiver burst", func(o *Options) { o.PerReceiverBurst = 0 }, false},
		{"no delivery in flight", func(o *Options) { o.MaxInFlight = 0 }, false},
		{"no dedup window", func(o *Options) { o.DedupWindow = 0 }, false},
		{"no dedup size", func(o *Options) { o.DedupSize = 0 }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := NewOptions()
			c.mutate(o)
			errs := o.Validate()
			if c.ok {
				assert.Empty(t, errs)
			} else {
				assert.NotEmpty(t, errs)
			}
		})
	}
}

func TestOptionsFlags(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("receivers", pflag.ContinueOnError)
	o.AddFlags(fs)
	require.NoError(t, fs.Parse([]string{
		"--receiver-bind-address=127.0.0.1:9080", "--receiver-plain-http", "--receiver-max-body-bytes=2048",
		"--receiver-qps=1.5", "--receiver-burst=3", "--receiver-qps-per-receiver=0.5", "--receiver-burst-per-receiver=2",
		"--receiver-max-in-flight=4", "--receiver-dedup-window=1m",
	}))
	want := NewOptions()
	want.BindAddress, want.PlainHTTP, want.MaxBodyBytes = "127.0.0.1:9080", true, 2048
	want.QPS, want.Burst, want.PerReceiverQPS, want.PerReceiverBurst = 1.5, 3, 0.5, 2
	want.MaxInFlight, want.DedupWindow = 4, 60e9
	assert.Equal(t, want, o)
	assert.Empty(t, o.Validate())
}
