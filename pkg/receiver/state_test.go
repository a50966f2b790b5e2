package receiver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	convoyv1alpha1client "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/typed/convoy/v1alpha1"
)

// The dedup holds at most its size, forgets after its window and on
// request.
func TestDedup(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	d := newDedup(time.Minute, 3)
	key := func(i int) dedupKey { return dedupKey{uid: "u", id: strconv.Itoa(i)} }
	for i := range 5 {
		assert.False(t, d.seen(key(i), now))
	}
	assert.Equal(t, 3, d.order.Len())
	assert.Len(t, d.byKey, 3)
	assert.False(t, d.seen(key(0), now), "the oldest was forgotten past the size")
	assert.True(t, d.seen(key(4), now.Add(59*time.Second)))
	assert.False(t, d.seen(key(4), now.Add(time.Minute)), "the window passed")
	d.forget(key(4))
	assert.False(t, d.seen(key(4), now.Add(time.Minute)))
	assert.False(t, d.seen(dedupKey{uid: "other", id: "4"}, now.Add(time.Minute)), "another Receiver's id")
}

// The limiters kept are bounded: those refilled go first, then the one
// unused longest.
func TestLimitsBounded(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Unix(1_800_000_000, 0))
	o := NewOptions()
	l := newLimits(*o, clock)
	for i := range maxReceiverLimiters + 10 {
		ok, _ := l.allow(types.UID(fmt.Sprint(i)))
		require.True(t, ok)
		if i%o.Burst == o.Burst-1 {
			clock.SetTime(clock.Now().Add(time.Duration(float64(o.Burst)/o.QPS) * time.Second))
		}
	}
	assert.LessOrEqual(t, len(l.perReceiver), maxReceiverLimiters)

	// None refilled: the one unused longest is dropped.
	l = newLimits(*o, clock)
	for i := range maxReceiverLimiters {
		l.receiver(types.UID(fmt.Sprint(i)), clock.Now().Add(time.Duration(i)*time.Nanosecond)).ReserveN(clock.Now(), 1)
	}
	l.receiver("new", clock.Now().Add(maxReceiverLimiters*time.Nanosecond))
	assert.Len(t, l.perReceiver, maxReceiverLimiters)
	assert.NotContains(t, l.perReceiver, types.UID("0"))
	assert.Contains(t, l.perReceiver, types.UID("1"))
}

// pagedReleases serves Releases in pages of Limit, as the API server does.
type pagedReleases struct {
	convoyv1alpha1client.ReleaseInterface
	items []convoyv1alpha1.Release
	opts  []metav1.ListOptions
	err   error
}

func (p *pagedReleases) Releases(string) convoyv1alpha1client.ReleaseInterface { return p }

func (p *pagedReleases) List(_ context.Context, opts metav1.ListOptions) (*convoyv1alpha1.ReleaseList, error) {
	p.opts = append(p.opts, opts)
	if p.err != nil {
		return nil, p.err
	}
	start := 0
	if opts.Continue != "" {
		start, _ = strconv.Atoi(opts.Continue)
	}
	end := min(start+int(opts.Limit), len(p.items))
	list := &convoyv1alpha1.ReleaseList{Items: p.items[start:end]}
	if end < len(p.items) {
		list.Continue = strconv.Itoa(end)
	}
	return list, nil
}

func manyReleases(n int) []convoyv1alpha1.Release {
	out := make([]convoyv1alpha1.Release, n)
	for i := range out {
		out[i] = release("ns", fmt.Sprint("r-", i), convoyv1alpha1.ReleaseSource{}, nil, map[string]string{"app": "x"})
	}
	return out
}

func TestClientLister(t *testing.T) {
	ctx := context.Background()
	selector := labels.SelectorFromSet(labels.Set{"app": "x"})

	p := &pagedReleases{items: manyReleases(1200)}
	got, err := ClientLister(p).List(ctx, "ns", selector)
	require.NoError(t, err)
	assert.Len(t, got, 1200)
	require.Len(t, p.opts, 3)
	assert.Equal(t, "app=x", p.opts[0].LabelSelector)
	assert.Equal(t, int64(listPageSize), p.opts[0].Limit)

	p = &pagedReleases{items: manyReleases(MaxListedReleases + 1)}
	got, err = ClientLister(p).List(ctx, "ns", selector)
	assert.ErrorIs(t, err, ErrTruncated)
	assert.Len(t, got, MaxListedReleases)

	p = &pagedReleases{items: manyReleases(3)}
	got, err = ClientLister(p).List(ctx, "ns", labels.Nothing())
	require.NoError(t, err)
	assert.Empty(t, got, "a selector of nothing selects nothing, whatever its string")

	p = &pagedReleases{err: errors.New("down")}
	_, err = ClientLister(p).List(ctx, "ns", selector)
	assert.ErrorContains(t, err, "down")
	_, err = ClientLister(p).List(ctx, "ns", nil)
	assert.Error(t, err)
}
