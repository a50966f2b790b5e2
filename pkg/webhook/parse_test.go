package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return data
}

// headers is an http.Header of name, value pairs.
func headers(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func TestReceive(t *testing.T) {
	tests := []struct {
		name    string
		typ     Type
		headers http.Header
		body    string // a fixture
		want    Delivery
	}{
		{
			name: "GitHub push", typ: GitHub, body: "github-push.json",
			headers: headers("X-GitHub-Event", "push", "X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958"),
			want: Delivery{Type: GitHub, Event: "push", ID: "72d3162e-cc78-11e3-81ab-4c9367dc0958",
				Repositories: []string{"https://github.com/Acme/deploy.git", "git@github.com:Acme/deploy.git", "https://github.com/Acme/deploy"},
				Refs:         []string{"refs/heads/main"}},
		},
		{
			name: "GitHub ping", typ: GitHub, body: "github-ping.json",
			headers: headers("X-GitHub-Event", "ping", "X-GitHub-Delivery", "d1"),
			want:    Delivery{Type: GitHub, Event: "ping", ID: "d1", Ping: true},
		},
		{
			name: "GitHub event of no interest", typ: GitHub, body: "github-push.json",
			headers: headers("X-GitHub-Event", "issues"),
			want:    Delivery{Type: GitHub, Event: "issues"},
		},
		{
			name: "GitLab Push Hook", typ: GitLab, body: "gitlab-push.json",
			headers: headers("X-Gitlab-Event", "Push Hook", "X-Gitlab-Event-UUID", "13792a34-cac6-4fda-95a8-c58e00a3954e", "X-Request-Id", "other"),
			want: Delivery{Type: GitLab, Event: "Push Hook", ID: "13792a34-cac6-4fda-95a8-c58e00a3954e",
				Repositories: []string{"https://gitlab.example.com/platform/team/deploy.git", "ssh://git@gitlab.example.com:2222/platform/team/deploy.git", "https://gitlab.example.com/platform/team/deploy"},
				Refs:         []string{"refs/heads/release/1.x"}},
		},
		{
			name: "GitLab Tag Push Hook, X-Request-Id", typ: GitLab, body: "gitlab-tag-push.json",
			headers: headers("X-Gitlab-Event", "Tag Push Hook", "X-Request-Id", "01HQ2X"),
			want: Delivery{Type: GitLab, Event: "Tag Push Hook", ID: "01HQ2X",
				Repositories: []string{"https://gitlab.example.com/platform/deploy.git", "git@gitlab.example.com:platform/deploy.git", "https://gitlab.example.com/platform/deploy"},
				Refs:         []string{"refs/tags/v1.4.0"}},
		},
		{
			name: "GitLab Merge Request Hook", typ: GitLab, body: "gitlab-push.json",
			headers: headers("X-Gitlab-Event", "Merge Request Hook"),
			want:    Delivery{Type: GitLab, Event: "Merge Request Hook"},
		},
		{
			name: "Gitea push", typ: Gitea, body: "gitea-push.json",
			headers: headers("X-Gitea-Event", "push", "X-Gitea-Delivery", "f6266f16-1bf3-46a5-9ea4-602e06ead473"),
			want: Delivery{Type: Gitea, Event: "push", ID: "f6266f16-1bf3-46a5-9ea4-602e06ead473",
				Repositories: []string{"https://git.example.org/acme/deploy.git", "ssh://git@git.example.org:2222/acme/deploy.git", "https://git.example.org/acme/deploy"},
				Refs:         []string{"refs/tags/v2.0.1"}},
		},
		{
			name: "Forgejo push", typ: Forgejo, body: "gitea-push.json",
			headers: headers("X-Forgejo-Event", "push", "X-Forgejo-Delivery", "a1", "X-Gitea-Delivery", "b2"),
			want: Delivery{Type: Forgejo, Event: "push", ID: "a1",
				Repositories: []string{"https://git.example.org/acme/deploy.git", "ssh://git@git.example.org:2222/acme/deploy.git", "https://git.example.org/acme/deploy"},
				Refs:         []string{"refs/tags/v2.0.1"}},
		},
		{
			name: "Forgejo reads its own event header", typ: Forgejo, body: "gitea-push.json",
			headers: headers("X-Gitea-Event", "push"),
			want:    Delivery{Type: Forgejo},
		},
		{
			name: "Bitbucket Server refs_changed", typ: BitbucketServer, body: "bitbucket-server-refs-changed.json",
			headers: headers("X-Event-Key", "repo:refs_changed", "X-Request-Id", "e3f3a5f1-1f0e-4c6c-9f36-5b1e4b0a7c11"),
			want: Delivery{Type: BitbucketServer, Event: "repo:refs_changed", ID: "e3f3a5f1-1f0e-4c6c-9f36-5b1e4b0a7c11",
				Repositories: []string{"ssh://git@bitbucket.example.com:7999/plat/deploy.git", "https://bitbucket.example.com/scm/plat/deploy.git"},
				Refs:         []string{"refs/heads/main", "refs/tags/v3.1.0"}},
		},
		{
			name: "Bitbucket Server test connection", typ: BitbucketServer, body: "github-ping.json",
			headers: headers("X-Event-Key", "diagnostics:ping"),
			want:    Delivery{Type: BitbucketServer, Event: "diagnostics:ping", Ping: true},
		},
		{
			name: "Harbor PUSH_ARTIFACT", typ: Harbor, body: "harbor-push-artifact.json",
			want: Delivery{Type: Harbor, Event: "PUSH_ARTIFACT",
				Repositories: []string{"harbor.example.com/platform/web-bundle"}, Tags: []string{"1.7.0"}},
		},
		{
			name: "generic", typ: Generic, body: "generic.json",
			headers: headers("X-Request-Id", "ci-4711"),
			want: Delivery{Type: Generic, Event: "push", ID: "ci-4711",
				Repositories: []string{"https://git.internal/ops/deploy.git", "registry.internal:5000/ops/bundle"},
				Refs:         []string{"refs/heads/main"}, Tags: []string{"2024.02.20"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := fixture(t, tt.body)
			h := tt.headers.Clone()
			if h == nil {
				h = http.Header{}
			}
			name, value := Sign(tt.typ, body, testSecret)
			h.Set(name, value)
			got, err := Receive(tt.typ, h, body, testSecret)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, !tt.want.Ping && len(tt.want.Repositories) > 0, got.Refresh())

			// The same delivery with a wrong secret, or its signature on
			// another body, is refused before the body is read.
			_, err = Receive(tt.typ, h, body, []byte("wrong"))
			assertKind(t, err, KindMismatch)
			_, err = Receive(tt.typ, h, []byte("{}"), nil)
			assertKind(t, err, KindNoSecret)
		})
	}
}

func assertKind(t *testing.T, err error, kind Kind) {
	t.Helper()
	var werr *Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, kind, werr.Kind, err.Error())
}

// pushHeaders are the headers of an event each type parses the body of.
var pushHeaders = map[Type]http.Header{
	GitHub:          headers("X-GitHub-Event", "push"),
	GitLab:          headers("X-Gitlab-Event", "Push Hook"),
	Gitea:           headers("X-Gitea-Event", "push"),
	Forgejo:         headers("X-Forgejo-Event", "push"),
	BitbucketServer: headers("X-Event-Key", "repo:refs_changed"),
	Generic:         http.Header{},
	Harbor:          http.Header{},
}

func TestParseMalformed(t *testing.T) {
	junk := bytes.Repeat([]byte("\x00{[\"junk"), (1<<20)/8) // 1 MiB
	bodies := map[string][]byte{
		"empty":           {},
		"not JSON":        []byte("ref=refs/heads/main"),
		"truncated":       []byte(`{"ref": "refs/heads/main", "repository": {`),
		"an array":        []byte(`[{"ref": "refs/heads/main"}]`),
		"a wrong type":    []byte(`{"ref": 7, "repository": [], "project": "x", "changes": {}, "event_data": 1, "repositories": "x", "type": 1}`),
		"1 MiB of junk":   junk,
		"deeply nested":   []byte(strings.Repeat("[", 100000) + strings.Repeat("]", 100000)),
		"a trailing junk": []byte(`{"ref": "refs/heads/main"} x`),
	}
	for _, typ := range Types {
		for name, body := range bodies {
			t.Run(fmt.Sprintf("%s/%s", typ, name), func(t *testing.T) {
				h := pushHeaders[typ].Clone()
				hn, hv := Sign(typ, body, testSecret)
				h.Set(hn, hv)
				_, err := Receive(typ, h, body, testSecret)
				assertKind(t, err, KindMalformedBody)
				assert.Less(t, len(err.Error()), 1024, "the body is not echoed")
			})
		}
	}
}

func TestParseUnsignedJunkIsNotRead(t *testing.T) {
	junk := bytes.Repeat([]byte("x"), 1<<20)
	for _, typ := range Types {
		h := pushHeaders[typ].Clone()
		hn, hv := Sign(typ, []byte("another body"), testSecret)
		h.Set(hn, hv)
		_, err := Receive(typ, h, junk, testSecret)
		if schemes[typ].token {
			assertKind(t, err, KindMalformedBody) // a token does not sign the body
		} else {
			assertKind(t, err, KindMismatch)
		}
	}
}

func TestParseBounds(t *testing.T) {
	var repos, refs, tags []string
	for i := range 100 {
		repos = append(repos, fmt.Sprintf("https://git.example/org/repo%d.git", i))
		refs = append(refs, fmt.Sprintf("refs/heads/b%d", i))
		tags = append(tags, fmt.Sprintf("v%d", i))
	}
	repos = append([]string{"", "https://git.example/" + strings.Repeat("a", MaxURLLength), "https://git.example/org/repo0.git", "https://git.example/\x00"}, repos...)
	refs = append([]string{"main", "refs/heads/" + strings.Repeat("b", MaxRefLength), "refs/heads/b0", "refs/heads/\n"}, refs...)
	tags = append([]string{"sha256:954b", "-x", strings.Repeat("t", 129), "v0"}, tags...)
	body := fmt.Appendf(nil, `{"repositories": %s, "refs": %s, "tags": %s}`, jsonList(repos), jsonList(refs), jsonList(tags))
	h := headers("X-Request-Id", strings.Repeat("i", MaxIDLength+1))
	d, err := Parse(Generic, h, body)
	require.NoError(t, err)
	assert.Len(t, d.Repositories, MaxRepositories)
	assert.Equal(t, "https://git.example/org/repo0.git", d.Repositories[0], "the empty, too long and unprintable ones are dropped")
	assert.Equal(t, "https://git.example/org/repo1.git", d.Repositories[1], "a repeated one is kept once")
	assert.Len(t, d.Refs, MaxRefs)
	assert.Equal(t, []string{"refs/heads/b0", "refs/heads/b1"}, d.Refs[:2])
	assert.Len(t, d.Tags, MaxRefs)
	assert.Equal(t, []string{"v0", "v1"}, d.Tags[:2])
	assert.Empty(t, d.ID, "an id too long is dropped")

	d, err = Parse(Generic, headers("X-Request-Id", "a b<script>"), []byte(`{}`))
	require.NoError(t, err)
	assert.Empty(t, d.ID)
	assert.False(t, d.Refresh())
	d, err = Parse(GitHub, headers("X-GitHub-Event", strings.Repeat("p", MaxEventLength+1)), nil)
	require.NoError(t, err)
	assert.Equal(t, Delivery{Type: GitHub}, d)
}

func jsonList(list []string) string {
	data, err := json.Marshal(list)
	if err != nil {
		panic(err)
	}
	return string(data)
}

func TestParseHarbor(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		repos []string
		tags  []string
		event string
	}{
		{
			name:  "pushed by digest: the repository, no tag",
			body:  `{"type":"PUSH_ARTIFACT","event_data":{"resources":[{"digest":"sha256:954b","tag":"sha256:954b","resource_url":"harbor.example.com:8443/platform/web@sha256:954b"}],"repository":{"repo_full_name":"platform/web"}}}`,
			repos: []string{"harbor.example.com:8443/platform/web"}, event: "PUSH_ARTIFACT",
		},
		{
			name:  "a registry with a port and a tag",
			body:  `{"type":"PUSH_ARTIFACT","event_data":{"resources":[{"tag":"v1","resource_url":"harbor.example.com:8443/p/sub/web:v1"},{"tag":"v2","resource_url":"harbor.example.com:8443/p/sub/web:v2"}],"repository":{"repo_full_name":"p/sub/web"}}}`,
			repos: []string{"harbor.example.com:8443/p/sub/web"}, tags: []string{"v1", "v2"}, event: "PUSH_ARTIFACT",
		},
		{
			name:  "a resource of another repository is left out",
			body:  `{"type":"PUSH_ARTIFACT","event_data":{"resources":[{"tag":"v1","resource_url":"harbor.example.com/other/web:v1"},{"tag":"v1","resource_url":"web:v1"}],"repository":{"repo_full_name":"platform/web"}}}`,
			event: "PUSH_ARTIFACT",
		},
		{
			name:  "no repo_full_name",
			body:  `{"type":"PUSH_ARTIFACT","event_data":{"resources":[{"tag":"v1","resource_url":"harbor.example.com/platform/web:v1"}]}}`,
			event: "PUSH_ARTIFACT",
		},
		{
			name:  "another event",
			body:  `{"type":"DELETE_ARTIFACT","event_data":{"resources":[{"tag":"v1","resource_url":"harbor.example.com/platform/web:v1"}],"repository":{"repo_full_name":"platform/web"}}}`,
			event: "DELETE_ARTIFACT",
		},
		{name: "no event_data", body: `{"type":"PUSH_ARTIFACT"}`, event: "PUSH_ARTIFACT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Parse(Harbor, http.Header{}, []byte(tt.body))
			require.NoError(t, err)
			assert.Equal(t, Delivery{Type: Harbor, Event: tt.event, Repositories: tt.repos, Tags: tt.tags}, d)
		})
	}
}
