package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/pkg/browser"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned"
	"github.com/kumodo/convoy-apiserver/pkg/view"
)

// viewOptions are the flags and arguments of view.
type viewOptions struct {
	allNamespaces bool
	noOpen        bool
	port          int

	// Complete's
	namespace, name string
	reader          view.Reader
	// open opens a local file in a browser.
	open func(path string) error
}

func newViewCommand(o *Options) *cobra.Command {
	v := &viewOptions{}
	cmd := &cobra.Command{
		Use:   "view [NAME]",
		Short: "Serve a read-only web view of drift, owners and health on 127.0.0.1",
		Long: `Serve a read-only web view of the Releases of a namespace (or of all with -A) on
127.0.0.1, with your kubeconfig's access: for each Release whether it is in sync and
healthy, the revision its source resolved to and its last sync; for one Release its
drifted objects with each changed field side by side (desired and live), the manager
that changed it and when, the fields self-heal is fighting another controller for,
what the next sync would prune, each object's health, the renders applied, and the
preview. It prints the URL (with a token, required on every request) and opens a
browser when there is one, through a page written to a temporary file that only you may
read (so that the token is on no command line). Nothing in it changes anything.

Needs what the other commands need: list and get on releases (convoy.kumodo.io),
get on releases/diff, releases/health and releases/preview
(subresources.convoy.kumodo.io); what cannot be read is said in place.`,
		Example: `  kubectl convoy view -n shop
  kubectl convoy view -A --no-open
  kubectl convoy view web -n shop --port 8765`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: o.completeReleaseNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := v.Complete(o, args); err != nil {
				return err
			}
			if err := v.Validate(); err != nil {
				return err
			}
			return v.Run(cmd.Context(), o.Streams.Out, o.Now)
		},
	}
	cmd.Flags().BoolVarP(&v.allNamespaces, "all-namespaces", "A", false, "List the Releases of every namespace")
	cmd.Flags().BoolVar(&v.noOpen, "no-open", false, "Print the URL only; do not open a browser")
	cmd.Flags().IntVar(&v.port, "port", 0, "Port on 127.0.0.1 (0: any free port)")
	return cmd
}

// Complete reads the namespace and builds the clients.
func (v *viewOptions) Complete(o *Options, args []string) error {
	if len(args) == 1 {
		v.name = args[0]
	}
	c, err := o.client()
	if err != nil {
		return err
	}
	config, err := o.Flags.ToRESTConfig()
	if err != nil {
		return err
	}
	typed, err := convoyclient.NewForConfig(config)
	if err != nil {
		return err
	}
	v.namespace = c.namespace
	v.reader = &viewReader{client: c, typed: typed}
	v.open = openFile
	return nil
}

// Validate checks the flags.
func (v *viewOptions) Validate() error {
	if v.port < 0 || v.port > 65535 {
		return fmt.Errorf("--port %d: not a port", v.port)
	}
	if v.name != "" && v.allNamespaces {
		return errors.New("a Release NAME is in one namespace: give -n, not -A")
	}
	if v.name != "" {
		if errs := validation.IsDNS1123Subdomain(v.name); len(errs) > 0 {
			return fmt.Errorf("%q is not a Release name: %s", v.name, errs[0])
		}
	}
	return nil
}

// Run serves the view until ctx ends (Ctrl-C).
func (v *viewOptions) Run(ctx context.Context, out io.Writer, now func() time.Time) (err error) {
	// Loopback only, whatever the machine's other addresses.
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(v.port)))
	if err != nil {
		return fmt.Errorf("listening on 127.0.0.1: %w", err)
	}
	token, err := view.NewToken()
	if err != nil {
		ln.Close()
		return err
	}
	handler := view.NewHandler(v.reader, view.Options{Namespace: v.namespace, AllNamespaces: v.allNamespaces, Now: now})
	guard := &view.Guard{Addr: ln.Addr().String(), Token: token, Next: handler}
	server := &http.Server{
		Handler:           guard,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	path, what := "/", "namespace "+v.namespace
	switch {
	case v.name != "":
		path, what = view.ReleasePath(v.namespace, v.name), "Release "+v.namespace+"/"+v.name
	case v.allNamespaces:
		what = "every namespace"
	}
	url := guard.URL(path)
	fmt.Fprintf(out, "Serving the convoy view of %s at\n\n  %s\n\nThe URL holds the token that every request needs: keep it to yourself. Press Ctrl-C to stop.\n", what, url)
	served := make(chan error, 1)
	go func() { served <- server.Serve(ln) }()
	if !v.noOpen && hasBrowser() {
		remove, openErr := v.openURL(url)
		if openErr != nil {
			fmt.Fprintf(out, "Could not open a browser (%v): open the URL above.\n", openErr)
		}
		if remove != nil {
			// The page holds the token: it goes with the view.
			defer func() {
				if rmErr := remove(); rmErr != nil {
					err = errors.Join(err, fmt.Errorf("removing the page that opened the view: %w", rmErr))
				}
			}()
		}
	}
	select {
	case err := <-served:
		return fmt.Errorf("serving the view: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return server.Shutdown(shutdown)
}

// hasBrowser says whether there is a screen to open a browser on: on Linux
// and the BSDs, an X or Wayland display; elsewhere, always.
func hasBrowser() bool {
	switch runtime.GOOS {
	case "darwin", "windows":
		return true
	}
	return os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != ""
}

// openURL opens url in a browser without putting it on a command line: it
// writes a page that sends the browser on to url (view.WriteOpener) and has
// the system open that file; remove, once the view stops, removes it.
func (v *viewOptions) openURL(url string) (remove func() error, err error) {
	path, remove, err := view.WriteOpener(url)
	if err != nil {
		return nil, err
	}
	return remove, v.open(path)
}

// openFile opens the file path with the system's opener (xdg-open, open,
// rundll32), silently: its command line holds the path only.
func openFile(path string) error {
	browser.Stdout, browser.Stderr = io.Discard, io.Discard
	return browser.OpenFile(path)
}

// viewReader reads what the view shows, as the kubeconfig's user.
type viewReader struct {
	client *client
	typed  convoyclient.Interface
}

var _ view.Reader = (*viewReader)(nil)

// listChunk is the page size of the Release list: a namespace of thousands
// is read in a few requests, none of them huge.
const listChunk = 500

func (r *viewReader) ListReleases(ctx context.Context, namespace string) ([]convoyv1alpha1.Release, error) {
	var out []convoyv1alpha1.Release
	opts := metav1.ListOptions{Limit: listChunk}
	for {
		list, err := r.typed.ConvoyV1alpha1().Releases(namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing releases: %w", err)
		}
		out = append(out, list.Items...)
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

func (r *viewReader) GetRelease(ctx context.Context, namespace, name string) (*convoyv1alpha1.Release, error) {
	rel, err := r.typed.ConvoyV1alpha1().Releases(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading release %s/%s: %w", namespace, name, err)
	}
	return rel, nil
}

func (r *viewReader) Diff(ctx context.Context, namespace, name string) (*subresourcesv1alpha1.ReleaseDiff, error) {
	var d subresourcesv1alpha1.ReleaseDiff
	return &d, r.get(ctx, "diff", namespace, name, &d)
}

func (r *viewReader) Health(ctx context.Context, namespace, name string) (*subresourcesv1alpha1.ReleaseHealth, error) {
	var h subresourcesv1alpha1.ReleaseHealth
	return &h, r.get(ctx, "health", namespace, name, &h)
}

func (r *viewReader) Preview(ctx context.Context, namespace, name string) (*subresourcesv1alpha1.ReleasePreview, error) {
	var p subresourcesv1alpha1.ReleasePreview
	return &p, r.get(ctx, "preview", namespace, name, &p)
}

func (r *viewReader) get(ctx context.Context, subresource, namespace, name string, into any) error {
	_, err := r.client.do(ctx, request{verb: "get", subresource: subresource, namespace: namespace, name: name}, nil, into)
	return err
}
