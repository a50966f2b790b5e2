//go:build unix

package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopGrace is how long a process gets between SIGTERM and SIGKILL.
const stopGrace = 5 * time.Second

// process is a long-running child in its own process group whose stdout and
// stderr go to a log file.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd

	done    chan struct{} // closed once the process has exited and been reaped
	waitErr error         // valid after done is closed

	stopOnce sync.Once
	stopErr  error
}

// startProcess starts bin with args, appending its output to logPath.
func startProcess(name, logPath, bin string, args, env []string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log of %s: %w", name, err)
	}
	fmt.Fprintf(logFile, "### %s %s %s\n", time.Now().Format(time.RFC3339), bin, strings.Join(args, " "))

	cmd := exec.Command(bin, args...)
	cmd.Stdin = nil
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	// Files, not pipes: no copying goroutine, and Wait returns as soon as the
	// process exits even if a grandchild still holds the descriptors.
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has exited, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// exitError is the error to report when the process died while we waited for
// it to become ready (the caller adds the tail of the log).
func (p *process) exitError() error {
	_, err := p.exited()
	if err == nil {
		err = errors.New("exit status 0")
	}
	return fmt.Errorf("%s exited: %w", p.name, err)
}

// stop sends SIGTERM to the process group, SIGKILL after stopGrace, waits for
// the process to be reaped and finally SIGKILLs whatever is left in its group.
// It is idempotent.
func (p *process) stop() error {
	p.stopOnce.Do(func() { p.stopErr = p.doStop() })
	return p.stopErr
}

func (p *process) doStop() error {
	pgid := p.pid() // Setpgid: the group id is the leader's pid
	if done, _ := p.exited(); !done {
		if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("stop %s: SIGTERM: %w", p.name, err)
		}
		select {
		case <-p.done:
		case <-time.After(stopGrace):
			if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("stop %s: SIGKILL: %w", p.name, err)
			}
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				return fmt.Errorf("stop %s: pid %d did not exit after SIGKILL", p.name, pgid)
			}
		}
	}
	// Members of the group that outlived the leader.
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s: SIGKILL group: %w", p.name, err)
	}
	return nil
}

// tail returns the last n lines of the log file.
func (p *process) tail(n int) string { return tailFile(p.logPath, n) }

func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	defer f.Close()
	const maxRead = 256 << 10
	if st, err := f.Stat(); err == nil && st.Size() > maxRead {
		if _, err := f.Seek(st.Size()-maxRead, io.SeekStart); err != nil {
			return fmt.Sprintf("(cannot read %s: %v)", path, err)
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
