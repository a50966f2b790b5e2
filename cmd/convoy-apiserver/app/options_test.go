package app

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		name    string
		change  func(*Options)
		wantErr string
	}{
		{name: "defaults", change: func(*Options) {}},
		{name: "no workers", change: func(o *Options) { o.DriftWorkers = 0 }, wantErr: "--drift-workers"},
		{name: "no cost limit", change: func(o *Options) { o.CELCostLimit = 0 }, wantErr: "--cel-cost-limit"},
		{name: "negative resync", change: func(o *Options) { o.Resync = -time.Second }, wantErr: "--resync"},
		{name: "no target timeout", change: func(o *Options) { o.Target.Timeout = 0 }, wantErr: "--target-timeout"},
		{name: "no response limit", change: func(o *Options) { o.Target.MaxResponseBytes = 0 }, wantErr: "--max-target-response-bytes"},
		{name: "negative response limit", change: func(o *Options) { o.Target.MaxResponseBytes = -1 }, wantErr: "--max-target-response-bytes"},
		{name: "no fetch slot per namespace", change: func(o *Options) { o.Sources.PerNamespace = 0 }, wantErr: "--max-concurrent-fetches-per-namespace"},
		// The per-namespace cap is at most all the slots: lowering
		// --max-concurrent-fetches alone is valid.
		{name: "one fetch slot", change: func(o *Options) { o.Sources.Concurrency = 1 }},
		{name: "no render timeout", change: func(o *Options) { o.Render.Timeout = 0 }, wantErr: "--render-timeout"},
		{name: "no render slot", change: func(o *Options) { o.RenderConcurrency = 0 }, wantErr: "--max-concurrent-renders"},
		{name: "render memory too small", change: func(o *Options) { o.Render.Memory = 64 << 20 }, wantErr: "--render-memory-limit"},
		{name: "no ServiceAccount", change: func(o *Options) { o.Target.DefaultServiceAccount = "Not_A_Name" }, wantErr: "--default-service-account"},
		{name: "renew deadline past the lease", change: func(o *Options) { o.LeaderElection.RenewDeadline.Duration = time.Minute }, wantErr: "leader election"},
		{name: "leader election off ignores its timing", change: func(o *Options) {
			o.LeaderElection.LeaderElect = false
			o.LeaderElection.RenewDeadline.Duration = time.Minute
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.change(o)
			err := o.Validate()
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestFlags(t *testing.T) {
	fs := NewOptions().Flags()
	for _, name := range []string{"kubeconfig", "resync", "target-qps", "target-burst", "target-timeout", "drift-workers",
		"health-workers", "compare-workers", "cel-cost-limit", "leader-elect", "leader-elect-lease-duration", "secure-port",
		"default-service-account", "allow-loopback-clusters", "render-timeout", "max-render-objects", "max-render-bytes", "max-concurrent-renders",
		"render-memory-limit", "max-target-response-bytes", "allow-loopback-sources", "allow-private-sources", "max-concurrent-fetches-per-namespace"} {
		found := false
		for _, set := range fs.FlagSets {
			if set.Lookup(name) != nil {
				found = true
			}
		}
		assert.True(t, found, "--%s", name)
	}
}

// The limit of an answer of a target cluster is a flag, 64Mi by default.
func TestMaxTargetResponseBytesFlag(t *testing.T) {
	o := NewOptions()
	assert.Equal(t, 64<<20, o.Target.MaxResponseBytes)
	sets := o.Flags()
	require.NoError(t, sets.FlagSet("target clusters").Parse([]string{"--max-target-response-bytes=1048576"}))
	assert.Equal(t, 1<<20, o.Target.MaxResponseBytes)
}

func TestDenyCIDRFlag(t *testing.T) {
	o := NewOptions()
	sets := o.Flags()
	fs := sets.FlagSet("target clusters")
	require.NoError(t, fs.Parse([]string{"--deny-cidr=10.0.0.0/8,fd00:abcd::/32", "--deny-cidr", "192.168.1.5/16"}))
	var got []string
	for _, r := range o.Target.Deny {
		got = append(got, r.String())
	}
	assert.Equal(t, []string{"10.0.0.0/8", "fd00:abcd::/32", "192.168.0.0/16"}, got, "masked, in order")
	var bad []netip.Prefix
	assert.ErrorContains(t, prefixes{&bad}.Set("10.0.0.1"), "not a CIDR", "an address is not a range")
}

// Private ranges are refused to sources unless --allow-private-sources, and
// to Clusters unless --allow-private-clusters: one flag does not open the
// other.
func TestAllowPrivateFlags(t *testing.T) {
	o := NewOptions()
	assert.False(t, o.Sources.AllowPrivate, "refused by default")
	assert.False(t, o.Target.AllowPrivate, "refused by default")
	sets := o.Flags()
	require.NoError(t, sets.FlagSet("sources").Parse([]string{"--allow-private-sources"}))
	assert.True(t, o.Sources.AllowPrivate)
	assert.False(t, o.Target.AllowPrivate)
	require.NoError(t, sets.FlagSet("target clusters").Parse([]string{"--allow-private-clusters"}))
	assert.True(t, o.Target.AllowPrivate)
}
