package cmd

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

var testNow = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

func ago(d time.Duration) *metav1.Time {
	t := metav1.NewTime(testNow.Add(-d))
	return &t
}

func entry(group, kind, namespace, name string, state convoyv1alpha1.HealthState) subresourcesv1alpha1.EntryHealth {
	return subresourcesv1alpha1.EntryHealth{
		ObjectKey:         convoyv1alpha1.ObjectKey{Group: group, Kind: kind, Namespace: namespace, Name: name},
		Version:           "v1",
		RenderRef:         "0123456789abcdef",
		AssessedRenderRef: "0123456789abcdef",
		State:             state,
	}
}

func TestPrintHealth(t *testing.T) {
	progressing := entry("apps", "Deployment", "shop", "web", convoyv1alpha1.HealthProgressing)
	progressing.FirstUnhealthy = ago(3*time.Minute + 10*time.Second) // HumanDuration: 3m10s
	progressing.Message = "0 of 2 replicas available"
	stale := entry("", "ConfigMap", "shop", "settings", convoyv1alpha1.HealthHealthy)
	stale.AssessedRenderRef = "fedcba9876543210"
	notAssessed := entry("", "Service", "shop", "web", convoyv1alpha1.HealthUnknown)
	notAssessed.AssessedRenderRef = ""
	notAssessed.Message = "not assessed\nyet"
	hook := entry("batch", "Job", "shop", "migrate", convoyv1alpha1.HealthHealthy)
	hook.HookPhase = convoyv1alpha1.HookRunning
	clusterScoped := entry("rbac.authorization.k8s.io", "ClusterRole", "", "reader", convoyv1alpha1.HealthHealthy)
	degraded := &metav1.Condition{Type: "Healthy", Status: metav1.ConditionFalse, Reason: "Progressing", Message: "Deployment shop/web: 0 of 2 replicas available"}

	tests := []struct {
		name   string
		health subresourcesv1alpha1.ReleaseHealth
		want   string
	}{{
		name: "progressing deployment",
		health: subresourcesv1alpha1.ReleaseHealth{
			Healthy:       degraded,
			HealthSummary: &convoyv1alpha1.HealthSummary{Total: 2, Healthy: 1, Progressing: 1},
			Entries:       []subresourcesv1alpha1.EntryHealth{progressing, entry("", "ConfigMap", "shop", "settings", convoyv1alpha1.HealthHealthy)},
		},
		want: `
KIND              NAMESPACE   NAME       STATE         AGE     ASSESSED           MESSAGE
Deployment.apps   shop        web        Progressing   3m10s   0123456789abcdef   0 of 2 replicas available
ConfigMap         shop        settings   Healthy       -       0123456789abcdef   -
Healthy: False (Progressing) 1 of 2 healthy: Deployment shop/web: 0 of 2 replicas available
`,
	}, {
		name: "assessed at another render, not assessed, cluster-scoped",
		health: subresourcesv1alpha1.ReleaseHealth{
			Healthy:       &metav1.Condition{Type: "Healthy", Status: metav1.ConditionUnknown, Reason: "Pending"},
			HealthSummary: &convoyv1alpha1.HealthSummary{Total: 3, Healthy: 2, Unknown: 1},
			Entries:       []subresourcesv1alpha1.EntryHealth{stale, notAssessed, clusterScoped},
		},
		want: `
KIND                                    NAMESPACE   NAME       STATE     AGE   ASSESSED                                       MESSAGE
ConfigMap                               shop        settings   Healthy   -     fedcba9876543210 (applied: 0123456789abcdef)   -
Service                                 shop        web        Unknown   -     - (applied: 0123456789abcdef)                  not assessed yet
ClusterRole.rbac.authorization.k8s.io   -           reader     Healthy   -     0123456789abcdef                               -
Healthy: Unknown (Pending) 2 of 3 healthy
`,
	}, {
		name: "the counts of the message said once",
		health: subresourcesv1alpha1.ReleaseHealth{
			Healthy: &metav1.Condition{Type: "Healthy", Status: metav1.ConditionFalse, Reason: "Degraded",
				Message: "1 of 2 resources healthy; Deployment.apps shop/web is Degraded: 0 of 2 replicas available"},
			HealthSummary: &convoyv1alpha1.HealthSummary{Total: 2, Healthy: 1, Degraded: 1},
		},
		want: `
Healthy: False (Degraded) 1 of 2 healthy: Deployment.apps shop/web is Degraded: 0 of 2 replicas available
`,
	}, {
		name: "all healthy",
		health: subresourcesv1alpha1.ReleaseHealth{
			Healthy:       &metav1.Condition{Type: "Healthy", Status: metav1.ConditionTrue, Reason: "Healthy", Message: "2 of 2 resources healthy"},
			HealthSummary: &convoyv1alpha1.HealthSummary{Total: 2, Healthy: 2},
		},
		want: `
Healthy: True (Healthy) 2 of 2 healthy
`,
	}, {
		name: "hook column only with a hook",
		health: subresourcesv1alpha1.ReleaseHealth{
			Healthy: &metav1.Condition{Type: "Healthy", Status: metav1.ConditionTrue, Reason: "NotConfigured", Message: "no health assessment"},
			Entries: []subresourcesv1alpha1.EntryHealth{hook},
		},
		want: `
KIND        NAMESPACE   NAME      STATE     AGE   ASSESSED           HOOK      MESSAGE
Job.batch   shop        migrate   Healthy   -     0123456789abcdef   Running   -
Healthy: True (NotConfigured): no health assessment
`,
	}, {
		name:   "not applied, not assessed",
		health: subresourcesv1alpha1.ReleaseHealth{},
		want: `
Healthy: Unknown (not assessed yet)
`,
	}, {
		name: "terminal escapes in messages",
		health: subresourcesv1alpha1.ReleaseHealth{
			Healthy: &metav1.Condition{Status: metav1.ConditionFalse, Reason: "Degraded", Message: "bad \x1b[31mred"},
		},
		want: `
Healthy: False (Degraded): bad ^[[31mred
`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, printHealth(&out, &tt.health, testNow))
			assert.Equal(t, strings.TrimPrefix(tt.want, "\n"), out.String())
		})
	}
}

func raw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

func TestPrintDiff(t *testing.T) {
	deployment := subresourcesv1alpha1.ObjectDiff{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	configMap := subresourcesv1alpha1.ObjectDiff{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "settings", Status: subresourcesv1alpha1.ObjectInSync}
	scaled := deployment
	scaled.Status = subresourcesv1alpha1.ObjectModified
	scaled.Changes = []subresourcesv1alpha1.FieldChange{{Path: "spec.replicas", Op: subresourcesv1alpha1.ChangeReplace, Desired: raw("2"), Live: raw("5")}}
	changedAt := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	meta := func(d subresourcesv1alpha1.ReleaseDiff) subresourcesv1alpha1.ReleaseDiff {
		d.Namespace, d.Name, d.RenderRef, d.RenderSource = "shop", "web", "0123456789abcdef", subresourcesv1alpha1.RenderSourceFresh
		return d
	}

	tests := []struct {
		name    string
		diff    subresourcesv1alpha1.ReleaseDiff
		colored bool
		want    string
	}{{
		name: "in sync",
		diff: meta(subresourcesv1alpha1.ReleaseDiff{Result: subresourcesv1alpha1.DiffInSync, Objects: []subresourcesv1alpha1.ObjectDiff{
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web", Status: subresourcesv1alpha1.ObjectInSync}, configMap,
		}}),
		want: `
Release shop/web, render 0123456789abcdef (Fresh): InSync
InSync   Deployment.apps   shop/web
InSync   ConfigMap         shop/settings
`,
	}, {
		name: "in sync, with objects the next sync prunes",
		diff: meta(subresourcesv1alpha1.ReleaseDiff{Result: subresourcesv1alpha1.DiffInSync, Objects: []subresourcesv1alpha1.ObjectDiff{configMap},
			ExtraObjects: []subresourcesv1alpha1.ExtraObject{
				{ObjectKey: convoyv1alpha1.ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: "old"}, Version: "v1"},
				{ObjectKey: convoyv1alpha1.ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "worker"}, Version: "v1", Message: "cannot tell whether it exists: forbidden"},
			}}),
		want: `
Release shop/web, render 0123456789abcdef (Fresh): InSync
InSync   ConfigMap         shop/settings
Extra    ConfigMap         shop/old      (not in the render: the next sync prunes it)
Extra    Deployment.apps   shop/worker   (not in the render; cannot tell whether it exists: forbidden)
`,
	}, {
		name: "scaled deployment",
		diff: meta(subresourcesv1alpha1.ReleaseDiff{Result: subresourcesv1alpha1.DiffDrifted, Objects: []subresourcesv1alpha1.ObjectDiff{scaled, configMap}}),
		want: `
Release shop/web, render 0123456789abcdef (Fresh): Drifted
Modified   Deployment.apps   shop/web
InSync     ConfigMap         shop/settings

--- live   apps/v1 Deployment shop/web
+++ desired
@@ spec.replicas @@
-5
+2
`,
	}, {
		name: "who changed each field",
		diff: meta(subresourcesv1alpha1.ReleaseDiff{Result: subresourcesv1alpha1.DiffDrifted, Objects: []subresourcesv1alpha1.ObjectDiff{{
			Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web", Status: subresourcesv1alpha1.ObjectModified,
			ChangedBy: []string{"kubectl (scale)", "intruder", "unknown"},
			Changes: []subresourcesv1alpha1.FieldChange{
				{Path: "spec.replicas", Op: subresourcesv1alpha1.ChangeReplace, Desired: raw("2"), Live: raw("5"),
					Owners: []subresourcesv1alpha1.FieldOwner{{Manager: "kubectl", Operation: "Update", Subresource: "scale"}}},
				{Path: "spec.template.spec.containers[name=app].image", Op: subresourcesv1alpha1.ChangeReplace, Desired: raw(`"web:1"`), Live: raw(`"evil:1"`),
					Owners: []subresourcesv1alpha1.FieldOwner{{Manager: "intruder", Operation: "Apply", Time: &changedAt}}},
				{Path: "spec.paused", Op: subresourcesv1alpha1.ChangeReplace, Desired: raw("false"), Live: raw("true"), Unattributed: subresourcesv1alpha1.UnattributedUnowned},
			},
		}}}),
		want: `
Release shop/web, render 0123456789abcdef (Fresh): Drifted
Modified   Deployment.apps   shop/web

--- live   apps/v1 Deployment shop/web
+++ desired
@@ spec.replicas @@ changed by kubectl (scale), time unknown
-5
+2
@@ spec.template.spec.containers[name=app].image @@ changed by intruder 40s ago
-evil:1
+web:1
@@ spec.paused @@ no manager owns it: a client that records no managedFields (or reset them), or an admission webhook, changed it
-true
+false
`,
	}, {
		name:    "coloured",
		diff:    meta(subresourcesv1alpha1.ReleaseDiff{Result: subresourcesv1alpha1.DiffDrifted, Objects: []subresourcesv1alpha1.ObjectDiff{scaled}}),
		colored: true,
		want: `
Release shop/web, render 0123456789abcdef (Fresh): Drifted
Modified   Deployment.apps   shop/web

` + "\x1b[1m--- live   apps/v1 Deployment shop/web\x1b[0m\n\x1b[1m+++ desired\x1b[0m\n\x1b[36m@@ spec.replicas @@\x1b[0m\n\x1b[31m-5\x1b[0m\n\x1b[32m+2\x1b[0m\n",
	}, {
		name: "add, remove, structured values, missing object, cluster-scoped",
		diff: meta(subresourcesv1alpha1.ReleaseDiff{Result: subresourcesv1alpha1.DiffDrifted, Objects: []subresourcesv1alpha1.ObjectDiff{
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web", Status: subresourcesv1alpha1.ObjectModified, Changes: []subresourcesv1alpha1.FieldChange{
				{Path: `metadata.annotations["example.com/owner"]`, Op: subresourcesv1alpha1.ChangeAdd, Desired: raw(`"ops"`)},
				{Path: "metadata.labels.team", Op: subresourcesv1alpha1.ChangeRemove, Live: raw(`"payments"`)},
				{Path: "spec.template.spec.containers[name=app].args", Op: subresourcesv1alpha1.ChangeReplace,
					Desired: raw(`["--port=8080","--verbose","--log=json"]`), Live: raw(`["--port=8080","--log=json"]`)},
				{Path: "spec.template.spec.containers[name=app].resources", Op: subresourcesv1alpha1.ChangeReplace,
					Desired: raw(`{"limits":{"cpu":"1","memory":"1Gi"}}`), Live: raw(`{"limits":{"cpu":"500m","memory":"1Gi"}}`)},
			}},
			{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "settings", Status: subresourcesv1alpha1.ObjectMissing},
			{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Name: "reader", Status: subresourcesv1alpha1.ObjectModified, Changes: []subresourcesv1alpha1.FieldChange{
				{Path: "rules", Op: subresourcesv1alpha1.ChangeReplace, Desired: raw(`null`), Live: raw(`[]`)},
			}},
		}}),
		want: `
Release shop/web, render 0123456789abcdef (Fresh): Drifted
Modified   Deployment.apps                         shop/web
Missing    ConfigMap                               shop/settings
Modified   ClusterRole.rbac.authorization.k8s.io   reader

--- live   apps/v1 Deployment shop/web
+++ desired
@@ metadata.annotations["example.com/owner"] @@
+ops
@@ metadata.labels.team @@
-payments
@@ spec.template.spec.containers[name=app].args @@
 - --port=8080
+- --verbose
 - --log=json
@@ spec.template.spec.containers[name=app].resources @@
 limits:
-  cpu: 500m
+  cpu: "1"
   memory: 1Gi

--- live   v1 ConfigMap shop/settings (missing)
+++ desired
@@ not on the cluster: the whole object would be created @@

--- live   rbac.authorization.k8s.io/v1 ClusterRole reader
+++ desired
@@ rules @@
-[]
+null
`,
	}, {
		name: "undetermined without objects or render",
		diff: subresourcesv1alpha1.ReleaseDiff{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
			Result: subresourcesv1alpha1.DiffUndetermined, Reason: "ClusterNotFound", Message: "cluster nowhere not found"},
		want: `
Release shop/web: Undetermined
`,
	}, {
		name: "terminal escapes in values",
		diff: meta(subresourcesv1alpha1.ReleaseDiff{Result: subresourcesv1alpha1.DiffDrifted, Objects: []subresourcesv1alpha1.ObjectDiff{
			{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "settings", Status: subresourcesv1alpha1.ObjectModified, Changes: []subresourcesv1alpha1.FieldChange{
				{Path: "data.color\x1b[2J", Op: subresourcesv1alpha1.ChangeReplace, Desired: raw(`"blue"`), Live: raw(`"green"`)},
			}},
		}}),
		want: `
Release shop/web, render 0123456789abcdef (Fresh): Drifted
Modified   ConfigMap   shop/settings

--- live   v1 ConfigMap shop/settings
+++ desired
@@ data.color^[[2J @@
-green
+blue
`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, printDiff(&out, &tt.diff, tt.colored, time.Date(2026, 12, 1, 10, 0, 40, 0, time.UTC)))
			assert.Equal(t, strings.TrimPrefix(tt.want, "\n"), out.String())
		})
	}
}

func TestDiffExitCode(t *testing.T) {
	tests := []struct {
		result  subresourcesv1alpha1.DiffResult
		code    int
		wantErr string
	}{
		{subresourcesv1alpha1.DiffInSync, 0, ""},
		{subresourcesv1alpha1.DiffDrifted, 1, ""},
		{subresourcesv1alpha1.DiffUndetermined, 2, "the diff of release shop/web is undetermined (ClusterNotFound): cluster nowhere not found"},
		{"Sideways", 2, `unknown result "Sideways"`},
	}
	for _, tt := range tests {
		t.Run(string(tt.result), func(t *testing.T) {
			d := &subresourcesv1alpha1.ReleaseDiff{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
				Result: tt.result, Reason: "ClusterNotFound", Message: "cluster nowhere not found"}
			code, err := diffExitCode(d)
			assert.Equal(t, tt.code, code)
			if tt.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tt.wantErr)
			}
		})
	}
}

func TestDiffLines(t *testing.T) {
	tests := []struct {
		name string
		a, b []string
		want string
	}{
		{"both empty", nil, nil, ""},
		{"add", nil, []string{"x"}, "+x"},
		{"remove", []string{"x"}, nil, "-x"},
		{"replace", []string{"5"}, []string{"2"}, "-5 +2"},
		{"insert in the middle", []string{"a", "c"}, []string{"a", "b", "c"}, " a +b  c"},
		{"change in the middle", []string{"a", "b", "c"}, []string{"a", "x", "c"}, " a -b +x  c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, l := range diffLines(tt.a, tt.b) {
				got = append(got, string(l.op)+l.text)
			}
			assert.Equal(t, tt.want, strings.Join(got, " "))
		})
	}
	t.Run("too large for the LCS", func(t *testing.T) {
		a := make([]string, 2000)
		b := make([]string, 1000)
		lines := diffLines(a, b)
		require.Len(t, lines, 3000)
		assert.Equal(t, opDelete, lines[0].op)
		assert.Equal(t, opInsert, lines[2999].op)
	})
}

func TestPrintPreview(t *testing.T) {
	p := &subresourcesv1alpha1.ReleasePreview{
		ObjectMeta:   metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		RenderRef:    "0123456789abcdef",
		RenderSource: subresourcesv1alpha1.RenderSourceStored,
		Objects: []runtime.RawExtension{
			{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"shop"},"data":{"color":"blue"}}`)},
			{Raw: []byte(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"reader"}}`)},
		},
	}
	t.Run("yaml stream", func(t *testing.T) {
		var out bytes.Buffer
		require.NoError(t, printPreviewStream(&out, p))
		assert.Equal(t, `# Release shop/web: 2 objects
# renderRef: 0123456789abcdef
# renderSource: Stored
---
apiVersion: v1
data:
  color: blue
kind: ConfigMap
metadata:
  name: settings
  namespace: shop
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: reader
`, out.String())
	})
	t.Run("table", func(t *testing.T) {
		var out bytes.Buffer
		require.NoError(t, printPreviewTable(&out, p))
		assert.Equal(t, `KIND                                    NAMESPACE   NAME
ConfigMap                               shop        settings
ClusterRole.rbac.authorization.k8s.io   -           reader
Release shop/web: render 0123456789abcdef (Stored), 2 objects
`, out.String())
	})
	t.Run("empty render", func(t *testing.T) {
		var out bytes.Buffer
		require.NoError(t, printPreviewStream(&out, &subresourcesv1alpha1.ReleasePreview{ObjectMeta: p.ObjectMeta, RenderRef: "0123456789abcdef", RenderSource: "Fresh"}))
		assert.Equal(t, "# Release shop/web: 0 objects\n# renderRef: 0123456789abcdef\n# renderSource: Fresh\n", out.String())
	})
}

// The source a preview was resolved to is printed with the signature it
// was verified with: cosign as before, Git and Helm with the signer, and the
// tag's signature for a Git source verified in mode TagAndHEAD.
func TestPrintPreviewSignedSource(t *testing.T) {
	const (
		commit = "0123456789abcdef0123456789abcdef01234567"
		fpr    = "4F1A9C3E5B7D2A6E8C0B1D3F5A7C9E2B4D6F8A0C"
	)
	pgp := func(layout string) *subresourcesv1alpha1.SourceSignature {
		return &subresourcesv1alpha1.SourceSignature{Provider: "git", Format: "openpgp", Key: "release.asc", Fingerprint: fpr, KeyID: "8C0B1D3F5A7C9E2B", Identity: "Jane Doe <jane@example.com>", Layout: layout}
	}
	for _, tc := range []struct {
		name     string
		resolved *subresourcesv1alpha1.ResolvedSource
		line     string
	}{
		{"cosign", &subresourcesv1alpha1.ResolvedSource{Kind: "OCIRepository", URL: "oci://r/web", Tag: "v1", Digest: "sha256:00",
			Verified: &subresourcesv1alpha1.SourceSignature{Provider: "cosign", Key: "cosign.pub", Fingerprint: "sha256:ab", Layout: "referrer"}},
			"oci://r/web:v1 (sha256:00), signed: cosign key cosign.pub (sha256:ab, referrer)"},
		{"git SSH", &subresourcesv1alpha1.ResolvedSource{Kind: "GitRepository", URL: "http://git.local/apps.git", Ref: "refs/heads/main", Commit: commit,
			Verified: &subresourcesv1alpha1.SourceSignature{Provider: "git", Format: "ssh", Key: "ci.pub", Fingerprint: "SHA256:uN8mYz3V5qk2b7d6Zr0cXl9wQe1tPa4sHj8fGi2oKmE", Layout: "commit"}},
			"http://git.local/apps.git refs/heads/main (commit " + commit + "), signed: git ssh key ci.pub (SHA256:uN8mYz3V5qk2b7d6Zr0cXl9wQe1tPa4sHj8fGi2oKmE, commit)"},
		{"git TagAndHEAD", &subresourcesv1alpha1.ResolvedSource{Kind: "GitRepository", URL: "http://git.local/apps.git", Ref: "refs/tags/v1.2.0", Commit: commit, Verified: pgp("commit"), VerifiedTag: pgp("tag")},
			"http://git.local/apps.git refs/tags/v1.2.0 (commit " + commit + "), signed: git openpgp key release.asc by Jane Doe <jane@example.com> (" + fpr + ", key id 8C0B1D3F5A7C9E2B, commit)" +
				", tag signed: git openpgp key release.asc by Jane Doe <jane@example.com> (" + fpr + ", key id 8C0B1D3F5A7C9E2B, tag)"},
		{"helm", &subresourcesv1alpha1.ResolvedSource{Kind: "HelmRepository", URL: "https://charts.example", Chart: "web", Version: "1.2.3", Digest: "sha256:00",
			Verified: &subresourcesv1alpha1.SourceSignature{Provider: "helm", Format: "openpgp", Key: "charts.asc", Fingerprint: fpr, KeyID: "8C0B1D3F5A7C9E2B", Identity: "Charts <charts@example.com>", Layout: "prov"}},
			"web 1.2.3 (sha256:00), signed: helm openpgp key charts.asc by Charts <charts@example.com> (" + fpr + ", key id 8C0B1D3F5A7C9E2B, prov)"},
		{"a user id that moves the cursor is escaped", &subresourcesv1alpha1.ResolvedSource{Kind: "GitRepository", URL: "http://git.local/apps.git", Commit: commit,
			Verified: &subresourcesv1alpha1.SourceSignature{Provider: "git", Format: "openpgp", Key: "release.asc", Identity: "Eve \x1b[2J", Layout: "commit"}},
			"http://git.local/apps.git (commit " + commit + "), signed: git openpgp key release.asc by Eve ^[[2J (commit)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &subresourcesv1alpha1.ReleasePreview{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, RenderRef: "0123456789abcdef", RenderSource: subresourcesv1alpha1.RenderSourceFresh, ResolvedSource: tc.resolved}
			var out bytes.Buffer
			require.NoError(t, printPreviewTable(&out, p))
			assert.Equal(t, "Release shop/web: render 0123456789abcdef (Fresh), 0 objects\nResolved source: "+tc.line+"\n", out.String())
			out.Reset()
			require.NoError(t, printPreviewStream(&out, p))
			assert.Equal(t, "# Release shop/web: 0 objects\n# renderRef: 0123456789abcdef\n# renderSource: Fresh\n# resolvedSource: "+tc.line+"\n", out.String())
			out.Reset()
			require.NoError(t, printOverview(&out, &overview{release: &convoyv1alpha1.Release{ObjectMeta: p.ObjectMeta}, diff: &subresourcesv1alpha1.ReleaseDiff{ResolvedSource: tc.resolved}}, time.Now()))
			assert.Contains(t, out.String(), "Resolved source:   "+tc.line+"\n")
		})
	}
}

func TestPrintSync(t *testing.T) {
	at := metav1.NewMicroTime(time.Date(2026, 11, 30, 3, 0, 24, 123456000, time.UTC))
	tests := []struct {
		name string
		sync subresourcesv1alpha1.ReleaseSync
		want string
	}{
		{"answer", subresourcesv1alpha1.ReleaseSync{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, RequestedAt: &at},
			"sync requested for release shop/web at 2026-11-30T03:00:24.123456Z\n"},
		{"answer without metadata or time", subresourcesv1alpha1.ReleaseSync{},
			"sync requested for release default/web at an unknown time\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, printSync(&out, &tt.sync, "default", "web"))
			assert.Equal(t, tt.want, out.String())
		})
	}
}

func TestPrintRaw(t *testing.T) {
	in := []byte(`{"kind":"ReleaseSync","apiVersion":"subresources.convoy.kumodo.io/v1alpha1","metadata":{"name":"web"},"requestedBy":"alice"}`)
	tests := []struct{ output, want string }{
		{outputJSON, `{
    "kind": "ReleaseSync",
    "apiVersion": "subresources.convoy.kumodo.io/v1alpha1",
    "metadata": {
        "name": "web"
    },
    "requestedBy": "alice"
}
`},
		{outputYAML, `apiVersion: subresources.convoy.kumodo.io/v1alpha1
kind: ReleaseSync
metadata:
  name: web
requestedBy: alice
`},
	}
	for _, tt := range tests {
		t.Run(tt.output, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, printRaw(&out, tt.output, in))
			assert.Equal(t, tt.want, out.String())
		})
	}
	assert.ErrorContains(t, checkOutput("xml"), `unknown output format "xml": use one of table, wide, json, yaml, name`)
}

// The revision of the values source a render read values files from is
// shown beside the chart's, the same way and escaped the same way, and
// nothing is shown for a Release without one.
func TestPrintValuesSource(t *testing.T) {
	const commit = "0123456789abcdef0123456789abcdef01234567"
	chart := &subresourcesv1alpha1.ResolvedSource{Kind: "OCIRepository", URL: "oci://r/web", Tag: "v1", Digest: "sha256:00"}
	created := metav1.NewTime(time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC))
	since := metav1.NewTime(time.Date(2026, 12, 6, 10, 5, 0, 0, time.UTC))
	for _, tc := range []struct {
		name   string
		values *subresourcesv1alpha1.ResolvedSource
		last   *convoyv1alpha1.LastResolved
		// line is how values and last read, "" for no line.
		line, lastLine string
	}{
		{name: "none"},
		{name: "git",
			values:   &subresourcesv1alpha1.ResolvedSource{Kind: "GitRepository", URL: "https://git.example/values", Ref: "refs/heads/main", Commit: commit},
			last:     &convoyv1alpha1.LastResolved{Kind: "GitRepository", URL: "https://git.example/values", Ref: "refs/heads/main", Commit: commit, Time: since},
			line:     "https://git.example/values refs/heads/main (commit " + commit + ")",
			lastLine: "https://git.example/values refs/heads/main (commit " + commit + "), since 2026-12-06T10:05:00Z"},
		{name: "OCI bundle, signed",
			values: &subresourcesv1alpha1.ResolvedSource{Kind: "OCIRepository", URL: "oci://r/values", Tag: "prod", Digest: "sha256:11",
				Verified: &subresourcesv1alpha1.SourceSignature{Provider: "cosign", Key: "cosign.pub", Fingerprint: "sha256:ab", Layout: "referrer"}},
			last:     &convoyv1alpha1.LastResolved{Kind: "OCIRepository", URL: "oci://r/values", Tag: "prod", Digest: "sha256:11", Time: since},
			line:     "oci://r/values:prod (sha256:11), signed: cosign key cosign.pub (sha256:ab, referrer)",
			lastLine: "oci://r/values:prod (sha256:11), since 2026-12-06T10:05:00Z"},
		{name: "git, signed by a user id that moves the cursor",
			values: &subresourcesv1alpha1.ResolvedSource{Kind: "GitRepository", URL: "https://git.example/values", Commit: commit,
				Verified: &subresourcesv1alpha1.SourceSignature{Provider: "git", Format: "openpgp", Key: "values.asc", Identity: "Eve \x1b[2J", Layout: "commit"}},
			last:     &convoyv1alpha1.LastResolved{Kind: "GitRepository", URL: "https://git.example/values\x1b[2J", Commit: commit, Time: since},
			line:     "https://git.example/values (commit " + commit + "), signed: git openpgp key values.asc by Eve ^[[2J (commit)",
			lastLine: "https://git.example/values^[[2J (commit " + commit + "), since 2026-12-06T10:05:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			meta := metav1.ObjectMeta{Namespace: "shop", Name: "web", CreationTimestamp: created}
			p := &subresourcesv1alpha1.ReleasePreview{ObjectMeta: meta, RenderRef: "0123456789abcdef", RenderSource: subresourcesv1alpha1.RenderSourceFresh,
				ResolvedSource: chart, ResolvedValuesSource: tc.values}
			valuesLine := func(prefix string) string {
				if tc.line == "" {
					return ""
				}
				return prefix + tc.line + "\n"
			}

			var out bytes.Buffer
			require.NoError(t, printPreviewTable(&out, p))
			assert.Equal(t, "Release shop/web: render 0123456789abcdef (Fresh), 0 objects\nResolved source: oci://r/web:v1 (sha256:00)\n"+
				valuesLine("Values source: "), out.String())

			out.Reset()
			require.NoError(t, printPreviewStream(&out, p))
			assert.Equal(t, "# Release shop/web: 0 objects\n# renderRef: 0123456789abcdef\n# renderSource: Fresh\n# resolvedSource: oci://r/web:v1 (sha256:00)\n"+
				valuesLine("# resolvedValuesSource: "), out.String())

			out.Reset()
			d := &subresourcesv1alpha1.ReleaseDiff{ObjectMeta: meta, RenderRef: "2222222222222222", RenderSource: subresourcesv1alpha1.RenderSourceRevision,
				Result: subresourcesv1alpha1.DiffInSync, ResolvedSource: chart, ResolvedValuesSource: tc.values}
			require.NoError(t, printDiff(&out, d, false, created.Time))
			assert.Equal(t, "Release shop/web, render 2222222222222222 (Revision): InSync\nRevision: oci://r/web:v1 (sha256:00)\n"+
				valuesLine("Values source: "), out.String())

			out.Reset()
			r := &convoyv1alpha1.Release{ObjectMeta: meta, Status: convoyv1alpha1.ReleaseStatus{
				LastResolved:             &convoyv1alpha1.LastResolved{Kind: "OCIRepository", URL: "oci://r/web", Tag: "v1", Digest: "sha256:00", Time: since},
				LastResolvedValuesSource: tc.last,
			}}
			d.RenderSource = subresourcesv1alpha1.RenderSourceFresh
			require.NoError(t, printOverview(&out, &overview{release: r, diff: d}, created.Time))
			head, _, _ := strings.Cut(out.String(), "\n\n")
			if tc.line == "" {
				// The labels keep their width (TestPrintPreviewSignedSource).
				assert.NotContains(t, head, "Values source")
				assert.NotContains(t, head, "Last resolved values")
				assert.Contains(t, head, "\nResolved source:   oci://r/web:v1 (sha256:00)\nLast resolved:     ")
				return
			}
			want := `
Name:                   web
Namespace:              shop
Source:                 -
Target:                 the local cluster
Service account:        (the default)
Sync policy:            manual
Resolved source:        oci://r/web:v1 (sha256:00)
Values source:          ` + tc.line + `
Last resolved:          oci://r/web:v1 (sha256:00), since 2026-12-06T10:05:00Z
Last resolved values:   ` + tc.lastLine + `
Desired render:         2222222222222222 (Fresh)
Age:                    0s`
			assert.Equal(t, strings.TrimPrefix(want, "\n"), head)
		})
	}
}
