package cmd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

func TestViewValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    viewOptions
		wantErr string
	}{
		{name: "a namespace", opts: viewOptions{}},
		{name: "every namespace", opts: viewOptions{allNamespaces: true}},
		{name: "a Release", opts: viewOptions{name: "web", port: 8765}},
		{name: "a Release of every namespace", opts: viewOptions{name: "web", allNamespaces: true}, wantErr: "give -n, not -A"},
		{name: "not a name", opts: viewOptions{name: "Web/../x"}, wantErr: `"Web/../x" is not a Release name`},
		{name: "not a port", opts: viewOptions{port: 70000}, wantErr: "--port 70000: not a port"},
		{name: "a negative port", opts: viewOptions{port: -1}, wantErr: "not a port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}

// emptyReader is a cluster without Releases.
type emptyReader struct{}

func (emptyReader) ListReleases(context.Context, string) ([]convoyv1alpha1.Release, error) {
	return nil, nil
}

func (emptyReader) GetRelease(_ context.Context, _, name string) (*convoyv1alpha1.Release, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "convoy.kumodo.io", Resource: "releases"}, name)
}

func (emptyReader) Diff(context.Context, string, string) (*subresourcesv1alpha1.ReleaseDiff, error) {
	return nil, errors.New("no diff")
}

func (emptyReader) Health(context.Context, string, string) (*subresourcesv1alpha1.ReleaseHealth, error) {
	return nil, errors.New("no health")
}

func (emptyReader) Preview(context.Context, string, string) (*subresourcesv1alpha1.ReleasePreview, error) {
	return nil, errors.New("no preview")
}

// The browser is given a file, not the URL: a fake xdg-open first on PATH
// logs its command line, which must not hold the token; the file, which
// only the user may read, sends the browser on to the printed URL, which
// serves the view; the file is gone once the view stops. With --no-open or
// no display, nothing is opened or written.
func TestViewOpensAPageNotTheURL(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pkg/browser runs xdg-open on Linux only")
	}
	for _, tc := range []struct {
		name     string
		noOpen   bool
		display  string
		wantOpen bool
	}{
		{name: "a display", display: ":convoy-test", wantOpen: true},
		{name: "--no-open", noOpen: true, display: ":convoy-test"},
		{name: "no display", display: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin, tmp := t.TempDir(), t.TempDir()
			log := filepath.Join(bin, "xdg-open.log")
			require.NoError(t, os.WriteFile(filepath.Join(bin, "xdg-open"), []byte("#!/bin/sh\nprintf '%s\\n' \"$0\" \"$@\" >> '"+log+"'\n"), 0o755))
			t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			t.Setenv("DISPLAY", tc.display)
			t.Setenv("WAYLAND_DISPLAY", "")
			t.Setenv("TMPDIR", tmp)

			opened := make(chan string, 1)
			v := &viewOptions{namespace: "shop", noOpen: tc.noOpen, reader: emptyReader{}, open: func(path string) error {
				defer func() { opened <- path }()
				return openFile(path) // runs the fake xdg-open, and waits for it
			}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out bytes.Buffer
			ran := make(chan error, 1)
			go func() { ran <- v.Run(ctx, &out, time.Now) }()

			if !tc.wantOpen {
				cancel()
				require.NoError(t, <-ran)
				assert.Regexp(t, `http://127\.0\.0\.1:\d+/s/[A-Za-z0-9_-]{43}/`, out.String())
				assert.Empty(t, opened)
				assert.NoFileExists(t, log, "nothing was opened")
				entries, err := os.ReadDir(tmp)
				require.NoError(t, err)
				assert.Empty(t, entries, "nothing was written")
				return
			}
			path := <-opened // out is written before: Run prints, then opens
			m := regexp.MustCompile(`(http://127\.0\.0\.1:\d+/s/([A-Za-z0-9_-]{43})/)\n`).FindStringSubmatch(out.String())
			require.NotNil(t, m, out.String())
			url, token := m[1], m[2]

			args, err := os.ReadFile(log)
			require.NoError(t, err)
			assert.NotContains(t, string(args), token, "the token is on no command line")
			assert.Equal(t, filepath.Join(bin, "xdg-open")+"\nfile://"+path+"\n", string(args), "the opener is given the file")

			fi, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
			di, err := os.Stat(filepath.Dir(path))
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o700), di.Mode().Perm())
			assert.Equal(t, tmp, filepath.Dir(filepath.Dir(path)))
			page, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Contains(t, string(page), `content="0;url=`+url+`"`, "the page sends the browser on to the URL")

			res, err := http.Get(url)
			require.NoError(t, err)
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			require.NoError(t, err)
			assert.Equal(t, 200, res.StatusCode, string(body))
			assert.Contains(t, string(body), "Releases in shop")
			assert.Empty(t, res.Cookies(), "no cookie")

			cancel()
			require.NoError(t, <-ran)
			assert.NoDirExists(t, filepath.Dir(path), "the page goes with the view")
		})
	}
}
