package webhook

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// Parse reads what a delivery of type t says changed, from its headers and
// its body. It must run only after Verify accepted the delivery, on a body
// the caller has capped; it keeps at most the bounds above. An event of no
// interest is not an error: a Delivery with nothing to refresh (Refresh is
// false), its body unread. A body that is not the sender's JSON is an
// *Error of KindMalformedBody.
func Parse(t Type, h http.Header, body []byte) (Delivery, error) {
	switch t {
	case GitHub:
		return parseGitHubLike(t, h, body, "X-GitHub-Event", "X-GitHub-Delivery")
	case Gitea:
		return parseGitHubLike(t, h, body, "X-Gitea-Event", "X-Gitea-Delivery")
	case Forgejo:
		return parseGitHubLike(t, h, body, "X-Forgejo-Event", "X-Forgejo-Delivery")
	case GitLab:
		return parseGitLab(h, body)
	case BitbucketServer:
		return parseBitbucketServer(h, body)
	case Generic:
		return parseGeneric(h, body)
	case Harbor:
		return parseHarbor(h, body)
	}
	return Delivery{}, &Error{Kind: KindUnknownType, Type: t}
}

// decode unmarshals body into v, a JSON object; anything else is an
// *Error of KindMalformedBody.
func decode(t Type, body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return &Error{Kind: KindMalformedBody, Type: t, Err: err}
	}
	return nil
}

// githubPush is a push of GitHub, Gitea and Forgejo (Gitea's payload
// follows GitHub's).
type githubPush struct {
	Ref        string `json:"ref"`
	Repository *struct {
		CloneURL string `json:"clone_url"`
		SSHURL   string `json:"ssh_url"`
		HTMLURL  string `json:"html_url"`
	} `json:"repository"`
}

func parseGitHubLike(t Type, h http.Header, body []byte, eventHeader, idHeader string) (Delivery, error) {
	d := Delivery{Type: t, Event: event(h.Get(eventHeader)), ID: deliveryID(h.Get(idHeader))}
	switch {
	case t == GitHub && d.Event == "ping":
		d.Ping = true
		return d, nil
	case d.Event != "push":
		return d, nil
	}
	var p githubPush
	if err := decode(t, body, &p); err != nil {
		return Delivery{}, err
	}
	if p.Repository != nil {
		d.addRepositories(p.Repository.CloneURL, p.Repository.SSHURL, p.Repository.HTMLURL)
	}
	d.addRefs(p.Ref)
	return d, nil
}

// gitlabPush is GitLab's Push Hook and Tag Push Hook.
type gitlabPush struct {
	Ref     string `json:"ref"`
	Project *struct {
		GitHTTPURL string `json:"git_http_url"`
		GitSSHURL  string `json:"git_ssh_url"`
		WebURL     string `json:"web_url"`
	} `json:"project"`
}

func parseGitLab(h http.Header, body []byte) (Delivery, error) {
	id := h.Get("X-Gitlab-Event-UUID")
	if id == "" {
		id = h.Get("X-Request-Id")
	}
	d := Delivery{Type: GitLab, Event: event(h.Get("X-Gitlab-Event")), ID: deliveryID(id)}
	if d.Event != "Push Hook" && d.Event != "Tag Push Hook" {
		return d, nil
	}
	var p gitlabPush
	if err := decode(GitLab, body, &p); err != nil {
		return Delivery{}, err
	}
	if p.Project != nil {
		d.addRepositories(p.Project.GitHTTPURL, p.Project.GitSSHURL, p.Project.WebURL)
	}
	d.addRefs(p.Ref)
	return d, nil
}

// bitbucketRefsChanged is Bitbucket Server's repo:refs_changed.
type bitbucketRefsChanged struct {
	Repository *struct {
		Links struct {
			Clone []struct {
				Href string `json:"href"`
			} `json:"clone"`
		} `json:"links"`
	} `json:"repository"`
	Changes []struct {
		Ref struct {
			ID string `json:"id"`
		} `json:"ref"`
	} `json:"changes"`
}

func parseBitbucketServer(h http.Header, body []byte) (Delivery, error) {
	d := Delivery{Type: BitbucketServer, Event: event(h.Get("X-Event-Key")), ID: deliveryID(h.Get("X-Request-Id"))}
	switch d.Event {
	case "diagnostics:ping":
		d.Ping = true
		return d, nil
	case "repo:refs_changed":
	default:
		return d, nil
	}
	var p bitbucketRefsChanged
	if err := decode(BitbucketServer, body, &p); err != nil {
		return Delivery{}, err
	}
	if p.Repository != nil {
		for _, c := range p.Repository.Links.Clone {
			d.addRepositories(c.Href)
		}
	}
	for _, c := range p.Changes {
		d.addRefs(c.Ref.ID)
	}
	return d, nil
}

// GenericPayload is the body of a Generic delivery: the repositories
// (Git URLs or OCI host/path), the Git refs (refs/heads/X, refs/tags/X)
// and the OCI tags that changed.
type GenericPayload struct {
	Repositories []string `json:"repositories"`
	Refs         []string `json:"refs,omitempty"`
	Tags         []string `json:"tags,omitempty"`
}

func parseGeneric(h http.Header, body []byte) (Delivery, error) {
	d := Delivery{Type: Generic, Event: "push", ID: deliveryID(h.Get("X-Request-Id"))}
	var p GenericPayload
	if err := decode(Generic, body, &p); err != nil {
		return Delivery{}, err
	}
	d.addRepositories(p.Repositories...)
	d.addRefs(p.Refs...)
	d.addTags(p.Tags...)
	return d, nil
}

// harborEvent is a Harbor webhook (its "http" notify type, payload
// format Default).
type harborEvent struct {
	Type      string `json:"type"`
	EventData *struct {
		Resources []struct {
			Tag         string `json:"tag"`
			ResourceURL string `json:"resource_url"`
		} `json:"resources"`
		Repository *struct {
			RepoFullName string `json:"repo_full_name"`
		} `json:"repository"`
	} `json:"event_data"`
}

func parseHarbor(h http.Header, body []byte) (Delivery, error) {
	var p harborEvent
	if err := decode(Harbor, body, &p); err != nil {
		return Delivery{}, err
	}
	d := Delivery{Type: Harbor, Event: event(p.Type), ID: deliveryID(h.Get("X-Request-Id"))}
	if d.Event != "PUSH_ARTIFACT" || p.EventData == nil {
		return d, nil
	}
	fullName := ""
	if p.EventData.Repository != nil {
		fullName = p.EventData.Repository.RepoFullName
	}
	for _, r := range p.EventData.Resources {
		if repo, ok := harborRepository(r.ResourceURL, fullName); ok {
			d.addRepositories(repo)
			d.addTags(r.Tag)
		}
	}
	return d, nil
}

// harborRepository is the repository of a Harbor resource_url
// (host/project/repo:tag or host/project/repo@sha256:...): the URL
// without its tag or digest, when it ends with the event's
// repo_full_name (project/repo).
func harborRepository(resourceURL, fullName string) (string, bool) {
	repo := resourceURL
	if at := strings.IndexByte(repo, '@'); at >= 0 {
		repo = repo[:at]
	} else if colon := strings.LastIndexByte(repo, ':'); colon > strings.LastIndexByte(repo, '/') {
		repo = repo[:colon]
	}
	if fullName == "" || !strings.HasSuffix(repo, "/"+fullName) || strings.Count(repo, "/") < 2 {
		return "", false
	}
	return repo, true
}

// ociTag is the syntax of an OCI tag, as the Release's tag field has it;
// Harbor's "tag" of a push by digest (sha256:...) is not one.
var ociTag = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

func (d *Delivery) addRepositories(urls ...string) {
	for _, u := range urls {
		if len(d.Repositories) < MaxRepositories && u != "" && len(u) <= MaxURLLength && printable(u) && !slices.Contains(d.Repositories, u) {
			d.Repositories = append(d.Repositories, u)
		}
	}
}

// addRefs keeps the full names of refs (refs/...).
func (d *Delivery) addRefs(refs ...string) {
	for _, r := range refs {
		if len(d.Refs) < MaxRefs && strings.HasPrefix(r, "refs/") && len(r) <= MaxRefLength && printable(r) && !slices.Contains(d.Refs, r) {
			d.Refs = append(d.Refs, r)
		}
	}
}

func (d *Delivery) addTags(tags ...string) {
	for _, tag := range tags {
		if len(d.Tags) < MaxRefs && ociTag.MatchString(tag) && !slices.Contains(d.Tags, tag) {
			d.Tags = append(d.Tags, tag)
		}
	}
}

// event is a header's or body's event name, empty when too long or not
// printable ASCII.
func event(s string) string {
	if len(s) > MaxEventLength || !printable(s) {
		return ""
	}
	return s
}

// deliveryID is a delivery id header's value, empty when too long or of
// characters other than letters, digits and -_.:
func deliveryID(s string) string {
	if len(s) > MaxIDLength {
		return ""
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.:", c) >= 0) {
			return ""
		}
	}
	return s
}

// printable tells whether s is printable ASCII, spaces included (GitLab's
// events have them).
func printable(s string) bool {
	for _, c := range []byte(s) {
		if c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}
