package gitserver

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Git services, as in ?service= and the last element of a POST's path.
const (
	ServiceUploadPack  = "git-upload-pack"
	ServiceReceivePack = "git-receive-pack"
)

// maxChunkedBody bounds a chunked request body, which is read into memory
// because CGI needs its length first.
const maxChunkedBody = 64 << 20

// Options of a Server.
type Options struct {
	// Root is the directory holding the bare repositories
	// (GIT_PROJECT_ROOT); a repository root/name is served at /name.
	Root string
	// Username and Password, when Username is set, are required as basic
	// credentials of every request (401 with WWW-Authenticate otherwise).
	Username, Password string
	// Delay is how long each request waits before anything else (a slow
	// server). SetDelay changes it.
	Delay time.Duration
	// Log, when set, gets git http-backend's standard error and the errors
	// of net/http/cgi and net/http; else they are dropped.
	Log io.Writer
}

// Request is one request that reached the server.
type Request struct {
	Method, Path string
	// Service is the ?service= query, else the last element of the path
	// when it is a service (a POST to .../git-upload-pack), else "".
	Service string
	// Auth tells whether basic credentials were sent (right or wrong), and
	// User is their user name.
	Auth bool
	User string
	// Status is the HTTP status of the answer; 0 while there is none yet,
	// or when the client went away first.
	Status int
}

// Server is git http-backend serving the repositories under a root on
// 127.0.0.1.
type Server struct {
	// URL is http://127.0.0.1:PORT.
	URL string

	opts    Options
	srv     *httptest.Server
	backend cgi.Handler
	home    string
	// closing is closed by Close, ending the requests that wait for Delay.
	closing chan struct{}
	close   sync.Once

	mu       sync.Mutex
	requests []Request
	// resets counts the calls of Reset, so that a request that was
	// forgotten is not given a status.
	resets int
	down   bool
	delay  time.Duration
}

// backendPath is where git http-backend is: in git --exec-path.
var backendPath = sync.OnceValues(func() (string, error) {
	dir, err := runGit("", nil, nil, "--exec-path")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "git-http-backend")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("git http-backend: %w", err)
	}
	return p, nil
})

// StartRepo creates the bare repository name under opts.Root and starts a
// Server on it: the fixture of a test that needs one repository.
func StartRepo(opts Options, name string) (*Repo, *Server, error) {
	repo, err := InitBare(opts.Root, name)
	if err != nil {
		return nil, nil, err
	}
	s, err := Start(opts)
	if err != nil {
		return nil, nil, err
	}
	return repo, s, nil
}

// Start serves the repositories under opts.Root on 127.0.0.1 with git
// http-backend. git's defaults stand, so the client chooses the protocol
// version (git sends Git-Protocol for v2; go-git speaks v0).
//
// http-backend's environment is GIT_PROJECT_ROOT, GIT_HTTP_EXPORT_ALL=1,
// REMOTE_USER when the request is authenticated (which also lets it take
// pushes), HOME an empty directory of its own and GIT_CONFIG_NOSYSTEM=1 (so
// that no user or system config applies), PATH, and the request's CGI
// variables. net/http/cgi also passes on LD_LIBRARY_PATH when it is set.
func Start(opts Options) (*Server, error) {
	if opts.Root == "" {
		return nil, errors.New("gitserver: no root")
	}
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("gitserver root: %w", err)
	}
	if fi, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("gitserver root: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("gitserver root %s: not a directory", root)
	}
	backend, err := backendPath()
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("", "gitserver-home-")
	if err != nil {
		return nil, fmt.Errorf("gitserver home: %w", err)
	}
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	s := &Server{
		opts: opts,
		backend: cgi.Handler{
			Path:   backend,
			Dir:    root,
			Stderr: logw,
			Logger: log.New(logw, "gitserver: ", 0),
			Env: []string{
				"GIT_PROJECT_ROOT=" + root,
				"GIT_HTTP_EXPORT_ALL=1",
				"HOME=" + home,
				"GIT_CONFIG_NOSYSTEM=1",
			},
		},
		home:    home,
		closing: make(chan struct{}),
		delay:   opts.Delay,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(home)
		return nil, fmt.Errorf("gitserver: %w", err)
	}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.Listener.Close()
	s.srv.Listener = ln
	s.srv.Config.ErrorLog = log.New(logw, "gitserver: ", 0)
	s.srv.Start()
	s.URL = s.srv.URL
	return s, nil
}

// serve records r, waits for the delay, then answers 503 when down, 401
// without the right credentials, else with git http-backend.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	user, _, auth := r.BasicAuth()
	s.mu.Lock()
	i, resets := len(s.requests), s.resets
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Service: service(r), Auth: auth, User: user})
	delay := s.delay
	s.mu.Unlock()
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		s.mu.Lock()
		if s.resets == resets {
			s.requests[i].Status = sw.status
		}
		s.mu.Unlock()
	}()
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		case <-s.closing:
			http.Error(sw, "gitserver: closing", http.StatusServiceUnavailable)
			return
		}
	}
	s.mu.Lock()
	down := s.down
	s.mu.Unlock()
	if down {
		http.Error(sw, "gitserver: down", http.StatusServiceUnavailable)
		return
	}
	h := s.backend
	if s.opts.Username != "" {
		if !s.authorized(r) {
			sw.Header().Set("WWW-Authenticate", `Basic realm="gitserver"`)
			http.Error(sw, "gitserver: authentication required", http.StatusUnauthorized)
			return
		}
		h.Env = append(slices.Clip(h.Env), "REMOTE_USER="+user)
	}
	if slices.Contains(r.TransferEncoding, "chunked") {
		// git sends a body larger than http.postBuffer chunked, which
		// net/http/cgi refuses: hand it over with its length.
		body, err := io.ReadAll(io.LimitReader(r.Body, maxChunkedBody+1))
		if err != nil {
			http.Error(sw, "gitserver: reading the body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if len(body) > maxChunkedBody {
			http.Error(sw, "gitserver: body too large", http.StatusRequestEntityTooLarge)
			return
		}
		r = r.Clone(r.Context())
		r.TransferEncoding = nil
		r.ContentLength = int64(len(body))
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	h.ServeHTTP(sw, r)
}

// authorized tells whether r has the server's basic credentials.
func (s *Server) authorized(r *http.Request) bool {
	user, pass, ok := r.BasicAuth()
	return ok &&
		subtle.ConstantTimeCompare([]byte(user), []byte(s.opts.Username)) == 1 &&
		subtle.ConstantTimeCompare([]byte(pass), []byte(s.opts.Password)) == 1
}

// service is the Git service r asks for, or "".
func service(r *http.Request) string {
	if q := r.URL.Query().Get("service"); q != "" {
		return q
	}
	if last := path.Base(r.URL.Path); last == ServiceUploadPack || last == ServiceReceivePack {
		return last
	}
	return ""
}

// statusWriter remembers the status of an answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap is for http.ResponseController.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// RepoURL is the URL of the repository name under the root.
func (s *Server) RepoURL(name string) string { return s.URL + "/" + name }

// Requests are the requests that reached the server since it started or
// since Reset, in the order they came.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Reset forgets the requests.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
	s.resets++
}

// SetDown makes every request get 503 while down is true, as from a server
// that is down (after Delay).
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// SetDelay changes how long each request waits first.
func (s *Server) SetDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// Listings is how many ref listings of upload-pack (GET
// .../info/refs?service=git-upload-pack) reached the server, whatever their
// answer.
func (s *Server) Listings() int {
	return s.count(func(r Request) bool {
		return r.Method == http.MethodGet && r.Service == ServiceUploadPack && strings.HasSuffix(r.Path, "/info/refs")
	})
}

// Fetches is how many POST .../git-upload-pack reached the server, whatever
// their answer. A full clone in protocol v0 is one; a shallow one (--depth)
// takes two rounds; in protocol v2 (git's default, not go-git's), a client's
// ls-refs is such a POST too.
func (s *Server) Fetches() int {
	return s.count(func(r Request) bool {
		return r.Method == http.MethodPost && path.Base(r.Path) == ServiceUploadPack
	})
}

// count is how many requests match.
func (s *Server) count(match func(Request) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.requests {
		if match(r) {
			n++
		}
	}
	return n
}

// Close stops the server: the requests waiting for Delay get 503, and it
// returns once the others are answered.
func (s *Server) Close() {
	s.close.Do(func() {
		close(s.closing)
		s.srv.Close()
		os.RemoveAll(s.home)
	})
}
