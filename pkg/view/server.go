// Package view serves the read-only web view of `kubectl convoy view`: the
// Releases of a namespace (or all), one Release's drift with the owner of
// each changed field, its contested fields, what the next sync would prune,
// each object's health and its render history, and its preview. It reads
// through a Reader, with the access of whoever runs it, and changes
// nothing. Guard keeps it to the holder of the token, on its own address,
// under the token's prefix, which every link carries.
package view

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// Reader reads what the view shows, as the user: the Releases (namespace
// empty: of every namespace), and a Release's /diff, /health and /preview.
type Reader interface {
	ListReleases(ctx context.Context, namespace string) ([]convoyv1alpha1.Release, error)
	GetRelease(ctx context.Context, namespace, name string) (*convoyv1alpha1.Release, error)
	Diff(ctx context.Context, namespace, name string) (*subresourcesv1alpha1.ReleaseDiff, error)
	Health(ctx context.Context, namespace, name string) (*subresourcesv1alpha1.ReleaseHealth, error)
	Preview(ctx context.Context, namespace, name string) (*subresourcesv1alpha1.ReleasePreview, error)
}

// Options are what the view shows first.
type Options struct {
	// Namespace is the namespace of the list at "/"; with AllNamespaces,
	// every namespace.
	Namespace     string
	AllNamespaces bool
	// Now is the clock of the ages shown; nil: time.Now.
	Now func() time.Time
	// Timeout bounds the reads of one page; 0: 30 s.
	Timeout time.Duration
}

// Handler serves the pages: "/" (the list of Options' scope),
// /namespaces/NS/releases, /namespaces/NS/releases/NAME and
// /namespaces/NS/releases/NAME/preview, and the embedded assets under
// /static/. Put it behind a Guard: its links carry the Guard's prefix
// (BasePath).
type Handler struct {
	reader Reader
	opts   Options
	mux    *http.ServeMux
}

// NewHandler returns the Handler of reader.
func NewHandler(reader Reader, opts Options) *Handler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Timeout == 0 {
		opts.Timeout = 30 * time.Second
	}
	h := &Handler{reader: reader, opts: opts, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /{$}", h.root)
	h.mux.HandleFunc("GET /namespaces/{namespace}/releases", h.list)
	h.mux.HandleFunc("GET /namespaces/{namespace}/releases/{name}", h.release)
	h.mux.HandleFunc("GET /namespaces/{namespace}/releases/{name}/preview", h.preview)
	// One file, not the tree: ServeMux would redirect /static to /static/,
	// out of the Guard's prefix, which it does not know.
	h.mux.Handle("GET /static/{file}", http.FileServerFS(assets))
	// The icon as favicon.ico too, under the prefix like everything: a
	// browser that asks for /favicon.ico at the root, whatever the page
	// says, gets the 403 of a request without the token (Chromium follows
	// the page's link).
	h.mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		http.ServeFileFS(w, r, assets, "static/favicon.svg")
	})
	h.mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, http.StatusNotFound, "Not found", fmt.Errorf("the view has no page %s", r.URL.Path))
	})
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// ReleasePath is the path of a Release's page.
func ReleasePath(namespace, name string) string {
	return "/namespaces/" + namespace + "/releases/" + name
}

func (h *Handler) root(w http.ResponseWriter, r *http.Request) {
	namespace := h.opts.Namespace
	if h.opts.AllNamespaces {
		namespace = ""
	}
	h.serveList(w, r, namespace)
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	namespace := r.PathValue("namespace")
	if err := checkName(namespace); err != nil {
		h.fail(w, r, http.StatusBadRequest, "Bad namespace", err)
		return
	}
	h.serveList(w, r, namespace)
}

func (h *Handler) serveList(w http.ResponseWriter, r *http.Request, namespace string) {
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.Timeout)
	defer cancel()
	releases, err := h.reader.ListReleases(ctx, namespace)
	if err != nil {
		h.fail(w, r, statusOf(err), "Could not list the Releases", err)
		return
	}
	page := newListPage(BasePath(r), releases, namespace, r.URL.Query(), h.opts.Now())
	h.render(w, r, "list.html", page)
}

func (h *Handler) release(w http.ResponseWriter, r *http.Request) {
	namespace, name, ok := h.releaseKey(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.Timeout)
	defer cancel()
	// The three reads at once: the page waits for the slowest, not the sum.
	var (
		wg                             sync.WaitGroup
		release                        *convoyv1alpha1.Release
		diff                           *subresourcesv1alpha1.ReleaseDiff
		health                         *subresourcesv1alpha1.ReleaseHealth
		releaseErr, diffErr, healthErr error
	)
	wg.Add(3)
	go func() { defer wg.Done(); release, releaseErr = h.reader.GetRelease(ctx, namespace, name) }()
	go func() { defer wg.Done(); diff, diffErr = h.reader.Diff(ctx, namespace, name) }()
	go func() { defer wg.Done(); health, healthErr = h.reader.Health(ctx, namespace, name) }()
	wg.Wait()
	if releaseErr != nil {
		h.fail(w, r, statusOf(releaseErr), "Could not read the Release", releaseErr)
		return
	}
	h.render(w, r, "release.html", newReleasePage(BasePath(r), release, diff, diffErr, health, healthErr, h.opts.Now()))
}

func (h *Handler) preview(w http.ResponseWriter, r *http.Request) {
	namespace, name, ok := h.releaseKey(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.Timeout)
	defer cancel()
	p, err := h.reader.Preview(ctx, namespace, name)
	if err != nil {
		h.fail(w, r, statusOf(err), "Could not read the preview", err)
		return
	}
	page, err := newPreviewPage(BasePath(r), namespace, name, p)
	if err != nil {
		h.fail(w, r, http.StatusBadGateway, "Could not show the preview", err)
		return
	}
	h.render(w, r, "preview.html", page)
}

// releaseKey is the namespace and name of the path, checked: a malformed one
// is answered with 400 and never sent on.
func (h *Handler) releaseKey(w http.ResponseWriter, r *http.Request) (string, string, bool) {
	namespace, name := r.PathValue("namespace"), r.PathValue("name")
	for _, s := range []string{namespace, name} {
		if err := checkName(s); err != nil {
			h.fail(w, r, http.StatusBadRequest, "Bad Release name", err)
			return "", "", false
		}
	}
	return namespace, name, true
}

// checkName refuses what cannot be the name of a namespace or Release.
func checkName(s string) error {
	if errs := validation.IsDNS1123Subdomain(s); len(errs) > 0 {
		return fmt.Errorf("%q is not a valid name: %s", s, errs[0])
	}
	return nil
}

// statusOf is the HTTP status of an error of the Reader: the API server's
// for a status error (403, 404...), 502 for others (it could not be asked).
func statusOf(err error) int {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if code := int(status.Status().Code); code >= 400 && code < 600 {
			return code
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

// errorPage is the page of a failure.
type errorPage struct {
	layout
	Message string
}

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, code int, title string, err error) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	if execErr := templates.ExecuteTemplate(w, "error.html", errorPage{layout: layout{Title: title, Base: BasePath(r)}, Message: err.Error()}); execErr != nil {
		klog.ErrorS(execErr, "Writing the error page")
	}
}

// render writes the page whole, or a failure: a template error is never
// half a page.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, name string, data any) {
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, name, data); err != nil {
		klog.ErrorS(err, "Rendering a page", "template", name)
		h.fail(w, r, http.StatusInternalServerError, "Could not render the page", err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}
