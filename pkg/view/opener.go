package view

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// OpenerName is the name of the page WriteOpener writes.
const OpenerName = "open.html"

// WriteOpener writes a page that sends the browser on to url (the view's,
// with the token) into a new directory of its own (os.MkdirTemp makes it
// 0700), as a file only the user may read (0600), and returns the page's
// path and the function that removes the directory. The browser opens that
// file, not url: the token stays off the command lines of the opener
// (xdg-open) and of the browser, which every user of the machine may read
// (/proc/PID/cmdline).
func WriteOpener(url string) (path string, remove func() error, err error) {
	var page bytes.Buffer
	if err := templates.ExecuteTemplate(&page, "opener.html", url); err != nil {
		return "", nil, fmt.Errorf("rendering the page that opens the view: %w", err)
	}
	dir, err := os.MkdirTemp("", "kubectl-convoy-view-")
	if err != nil {
		return "", nil, fmt.Errorf("making a directory for the page that opens the view: %w", err)
	}
	remove = func() error { return os.RemoveAll(dir) }
	path = filepath.Join(dir, OpenerName)
	if err := os.WriteFile(path, page.Bytes(), 0o600); err != nil {
		_ = remove()
		return "", nil, fmt.Errorf("writing the page that opens the view: %w", err)
	}
	return path, remove, nil
}
