package tinkerlearner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/server/tinkerapi"
)

// startLocalTinker starts an offline Tinker server (server/tinkerapi) on
// p in this process, listening on a loopback port, and returns its base
// URL, its base model's name and how to stop it. The run then speaks the
// Tinker API over HTTP to its own process, exactly as to a remote server. The saved weights stay in stateDir, so
// that a resumed run's new server loads them. A forward pass takes a whole
// mini-batch, as the in-process learner's does, so the two sum their
// gradients in the same order.
func startLocalTinker(ctx context.Context, p *local.Policy, stateDir string, log *slog.Logger) (string, string, func(), error) {
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return "", "", nil, err
	}
	srv, err := tinkerapi.New(p, tinkerapi.Options{Dir: stateDir, Logger: log, MaxForwardTokens: 1 << 24, MaxData: 1 << 16})
	if err != nil {
		return "", "", nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		return "", "", nil, fmt.Errorf("listening on loopback: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	url := "http://" + ln.Addr().String()
	log.Info("tinker: offline server started", "url", url, "model", srv.Model(), "state_dir", stateDir)
	stop := func() {
		srv.Close() // releases held long-polls first
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			log.Warn("tinker: stopping the offline server", "err", err)
		}
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("tinker: offline server", "err", err)
		}
	}
	return url, srv.Model(), stop, nil
}
