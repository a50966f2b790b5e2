package health

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/agecache"
)

// maxCachedVerdicts bounds a VerdictCache.
const maxCachedVerdicts = 200_000

// VerdictCache keeps what the rules said of each object, keyed by what it
// depends on: the identity and cluster it was read as and on, the object,
// its resourceVersion and the rules (their sets' generations). A pass reuses
// it for an object its Reader's LIST saw unchanged (Reader.ResourceVersion):
// no read, no evaluation. The state still follows the time (the deadline).
// It is safe for concurrent use.
type VerdictCache struct {
	entries *agecache.Cache[verdictKey, cachedVerdict]
}

type verdictKey struct {
	scope           string
	resource        schema.GroupVersionResource
	namespace, name string
}

type cachedVerdict struct {
	rv, rules string
	verdict   Verdict
	hook      convoyv1alpha1.HookStatus
}

// NewVerdictCache returns a VerdictCache whose verdicts are reused for at
// most maxAge.
func NewVerdictCache(maxAge time.Duration, clk clock.PassiveClock) *VerdictCache {
	return &VerdictCache{entries: agecache.New[verdictKey, cachedVerdict](maxCachedVerdicts, maxAge, clk, nil)}
}

func (c *VerdictCache) get(key verdictKey, rv, rules string) (cachedVerdict, bool) {
	cached, ok := c.entries.Get(key)
	hit := ok && cached.rv == rv && cached.rules == rules
	agecache.CountLookup(agecache.CacheVerdict, hit)
	if !hit {
		return cachedVerdict{}, false
	}
	return cached, true
}

func (c *VerdictCache) put(key verdictKey, rv, rules string, verdict Verdict, hook convoyv1alpha1.HookStatus) {
	c.entries.Put(key, cachedVerdict{rv: rv, rules: rules, verdict: verdict, hook: hook})
}

// Len returns how many verdicts the cache holds.
func (c *VerdictCache) Len() int { return c.entries.Len() }

// rulesFingerprint names rules by their sets' UIDs and generations and their
// indexes: it changes when any of them does.
func rulesFingerprint(rules []*CompiledRule) string {
	var b strings.Builder
	for _, r := range rules {
		fmt.Fprintf(&b, "%s/%d/%d;", r.Set.UID, r.Set.Generation, r.Index)
	}
	return b.String()
}
