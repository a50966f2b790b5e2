//go:build unix

package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// startEtcd starts a single-member etcd on loopback with a fresh data dir.
func (c *ControlPlane) startEtcd(ctx context.Context) error {
	clientPort, err := freePort()
	if err != nil {
		return err
	}
	peerPort, err := freePort()
	if err != nil {
		return err
	}
	dataDir := filepath.Join(c.opts.Dir, "etcd")
	if err := os.RemoveAll(dataDir); err != nil {
		return fmt.Errorf("remove old etcd data: %w", err)
	}
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	p, err := c.launch("etcd", filepath.Join(c.opts.BinDir, "etcd"), []string{
		"--name=convoy-local",
		"--data-dir=" + dataDir,
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=convoy-local=" + peerURL,
		"--initial-cluster-state=new",
		"--unsafe-no-fsync",
	}, nil)
	if err != nil {
		return err
	}
	began := time.Now()
	client := &http.Client{Timeout: 2 * time.Second}
	err = poll(ctx, time.Minute, 200*time.Millisecond, "etcd "+clientURL+"/health", func(ctx context.Context) error {
		if done, _ := p.exited(); done {
			return p.exitError()
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientURL+"/health", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return notYet("%w", err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		var h struct {
			Health string `json:"health"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &h) != nil || h.Health != "true" {
			return notYet("/health: %s: %s", resp.Status, body)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w\nlast lines of %s:\n%s", err, p.logPath, p.tail(30))
	}
	c.etcdURL = clientURL
	c.logf("etcd ready on %s (%s)", clientURL, time.Since(began).Round(100*time.Millisecond))
	return nil
}
