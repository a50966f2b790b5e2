package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestCostsRatios(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		name             string
		gets             int
		get              time.Duration
		pages, items     int
		page             time.Duration
		whole            bool
		want             int
		wantMeasured     bool
		wantFull         int
		wantFullMeasured bool
	}{
		{name: "nothing measured: the defaults", want: ListCostRatio, wantFull: FullListCostRatio},
		{name: "too few GETs", gets: minGetSamples - 1, get: 2 * ms, pages: 10, items: 1000, page: 40 * ms,
			want: ListCostRatio, wantFull: FullListCostRatio},
		{name: "too few listed items", gets: 100, get: 2 * ms, pages: 1, items: minListedItems - 1, page: 40 * ms,
			want: ListCostRatio, wantFull: FullListCostRatio},
		// A GET of 2 ms, a page of 1,000 items in 80 ms: 25 items per GET.
		{name: "metadata-only LISTs", gets: 100, get: 2 * ms, pages: 10, items: 1000, page: 80 * ms,
			want: 25, wantMeasured: true, wantFull: FullListCostRatio},
		{name: "LISTs of whole objects", gets: 100, get: 2 * ms, pages: 10, items: 500, page: 250 * ms, whole: true,
			want: ListCostRatio, wantFull: 4, wantFullMeasured: true},
		{name: "bounded above: GETs stuck", gets: 100, get: 10 * time.Second, pages: 10, items: 1000, page: 10 * ms,
			want: maxListCostRatio, wantMeasured: true, wantFull: FullListCostRatio},
		{name: "bounded below: LISTs stuck", gets: 100, get: ms, pages: 10, items: 1000, page: time.Minute,
			want: minListCostRatio, wantMeasured: true, wantFull: FullListCostRatio},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCosts(clocktesting.NewFakePassiveClock(time.Now()))
			for range tc.gets {
				c.ObserveGet(tc.get)
			}
			for range tc.pages {
				c.ObserveList(tc.whole, tc.items, tc.page)
			}
			got, measured := c.ListRatio()
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantMeasured, measured)
			got, measured = c.FullListRatio()
			assert.Equal(t, tc.wantFull, got)
			assert.Equal(t, tc.wantFullMeasured, measured)
		})
	}
}

// The measure follows the cluster: what was measured a few half-lives ago
// weighs little against what is measured now, and alone it is too little to
// trust.
func TestCostsForget(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	c := NewCosts(clk)
	for range 100 {
		c.ObserveGet(2 * time.Millisecond)
	}
	for range 10 {
		c.ObserveList(false, 1000, 80*time.Millisecond)
	}
	ratio, _ := c.ListRatio()
	require.Equal(t, 25, ratio)

	// kube-apiserver is loaded: a LIST item now costs twice as much.
	clk.SetTime(clk.Now().Add(5 * costHalfLife))
	for range 100 {
		c.ObserveGet(2 * time.Millisecond)
	}
	for range 10 {
		c.ObserveList(false, 1000, 160*time.Millisecond)
	}
	ratio, measured := c.ListRatio()
	assert.True(t, measured)
	assert.InDelta(t, 12.5, ratio, 1, "the old measure weighs 1/32")

	// Quiet for long: too little left to trust.
	clk.SetTime(clk.Now().Add(10 * costHalfLife))
	ratio, measured = c.ListRatio()
	assert.False(t, measured)
	assert.Equal(t, ListCostRatio, ratio)
}

// An empty page, a nil Costs: nothing recorded, nothing broken.
func TestCostsIgnoreWhatTellsNothing(t *testing.T) {
	c := NewCosts(clocktesting.NewFakePassiveClock(time.Now()))
	for range 100 {
		c.ObserveGet(time.Millisecond)
		c.ObserveList(false, 0, time.Second)
	}
	_, measured := c.ListRatio()
	assert.False(t, measured)

	var none *Costs
	none.ObserveGet(time.Second)
	none.ObserveList(true, 10, time.Second)
	ratio, measured := none.ListRatio()
	assert.Equal(t, ListCostRatio, ratio)
	assert.False(t, measured)
}

// Snapshots choose with the measured price: the same demand that is worth a
// LIST at the default price reads one by one where GETs are measured cheap,
// and the other way round; each choice is counted with its price.
func TestSnapshotsPricedByMeasure(t *testing.T) {
	RegisterMetrics()
	windows := func(choice, measured string) uint64 {
		n, err := testutil.GetHistogramMetricCount(snapshotWindows.WithLabelValues(choice, measured))
		require.NoError(t, err)
		return n
	}
	measure := func(c *Costs, ratio int) {
		for range minGetSamples {
			c.ObserveGet(time.Duration(ratio) * time.Millisecond)
		}
		c.ObserveList(false, minListedItems, minListedItems*time.Millisecond)
	}
	ctx := context.Background()
	// A namespace of 8 × ListCostRatio objects: four lookups in a window
	// after a LIST are worth another at the default price (the demand
	// counts twice after a LIST: TestSnapshotsKeepListingUntilTheDemandHalves).
	for _, tc := range []struct {
		name  string
		ratio int // measured GET price in listed items; 0: not measured
		list  bool
	}{
		{name: "default price", list: true},
		{name: "GETs cheap", ratio: ListCostRatio / 2, list: false},
		{name: "GETs dear", ratio: 2 * ListCostRatio, list: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, lists, window := countedSnapshots(t, 8*ListCostRatio)
			c := NewCosts(s.clock)
			s.PricedBy(c)
			measuredLabel := "false"
			if tc.ratio > 0 {
				measure(c, tc.ratio)
				measuredLabel = "true"
			}
			_, err := s.Get(ctx, configMaps, "shop")
			require.NoError(t, err, "the first window lists")
			if tc.ratio > 0 {
				measure(c, tc.ratio) // again: its LIST was measured too
			}
			for range 3 {
				_, err = s.Get(ctx, configMaps, "shop")
				require.NoError(t, err)
			}
			listBefore, oneBefore := windows("list", measuredLabel), windows("one_by_one", measuredLabel)
			window()
			_, err = s.Get(ctx, configMaps, "shop")
			if tc.list {
				require.NoError(t, err)
				assert.Equal(t, int32(2), lists.Load())
				assert.Equal(t, listBefore+1, windows("list", measuredLabel))
			} else {
				assert.ErrorIs(t, err, ErrNotWorthListing)
				assert.Equal(t, int32(1), lists.Load())
				assert.Equal(t, oneBefore+1, windows("one_by_one", measuredLabel))
			}
		})
	}
}

// A read-ahead lists as many whole objects as the measured price of a GET
// pays for; the GETs that follow are measured.
func TestReadAheadPricedByMeasure(t *testing.T) {
	for _, tc := range []struct {
		name      string
		measured  bool
		wantGets  int
		wantWhole bool
	}{
		// 3 objects of 20: the default price lists 30, the whole namespace.
		{name: "default price", wantGets: 0, wantWhole: true},
		// A GET measured at 2 listed items: a budget of 6, not the whole.
		{name: "GETs cheap", measured: true, wantGets: 1, wantWhole: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, gets, lists := pagedReader(t, 20, nil)
			clk := clocktesting.NewFakePassiveClock(time.Now())
			r.clock, r.costs = clk, NewCosts(clk)
			if tc.measured {
				for range minGetSamples {
					r.costs.ObserveGet(2 * time.Millisecond)
				}
				r.costs.ObserveList(true, minListedItems, minListedItems*time.Millisecond)
				ratio, ok := r.costs.FullListRatio()
				require.True(t, ok)
				require.Equal(t, 2, ratio)
			}
			ctx := context.Background()
			r.ReadAhead(ctx, desiredConfigMaps("cm-0", "cm-1", "cm-19"))
			assert.Equal(t, 1, *lists)
			assert.Equal(t, tc.wantWhole, r.ahead.whole[snapshotKey{resource: configMapsGVR, namespace: "shop"}])

			getsBefore := r.costs.get.units
			_, err := r.Get(ctx, configMapObj("shop", "cm-19").GroupVersionKind(), "shop", "cm-19")
			require.NoError(t, err)
			assert.Equal(t, tc.wantGets, *gets)
			assert.InDelta(t, float64(tc.wantGets), r.costs.get.units-getsBefore, 0.001, "each GET is measured")
		})
	}
}
