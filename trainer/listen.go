package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/agentrl/agentrl/internal/httpapi"
)

// serveShutdownGrace is how long a stopping server waits for the requests
// in flight before closing their connections.
const serveShutdownGrace = 10 * time.Second

// Connection timeouts of the servers. A request's headers must arrive
// within serveHeaderTimeout (or its read timeout, when shorter), and its
// body within the read timeout of the request's start (-read-timeout);
// an idle keep-alive connection is closed after serveIdleTimeout. There
// is no write timeout, which would cut off what legitimately answers late
// or long: a long poll (retrieve_future), a stream, a long generation.
const (
	serveHeaderTimeout = 10 * time.Second
	serveIdleTimeout   = 2 * time.Minute
	defaultReadTimeout = 30 * time.Second
)

// serveUntilDone listens on addr and serves handler until ctx ends (SIGINT
// or SIGTERM), then calls closing (for what Shutdown does not wait on, such
// as WebSocket sessions) and shuts down gracefully. listening is told the
// address once it is bound. Request bodies must arrive within
// readTimeout. Listening beyond loopback without an API key is warned
// about.
func serveUntilDone(ctx context.Context, addr string, handler http.Handler, apiKey string, readTimeout time.Duration, log *slog.Logger,
	listening func(net.Addr), closing func()) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	hs := &http.Server{
		Handler:           httpapi.BodyReadTimeout(handler, readTimeout),
		ReadHeaderTimeout: min(serveHeaderTimeout, readTimeout),
		IdleTimeout:       serveIdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	listening(ln.Addr())
	if host, _, err := net.SplitHostPort(ln.Addr().String()); err == nil {
		if ip := net.ParseIP(host); ip != nil && !ip.IsLoopback() && apiKey == "" {
			log.Warn("listening beyond loopback without an API key; set -api-key or AGENTRL_API_KEY")
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "grace", serveShutdownGrace)
	if closing != nil {
		closing()
	}
	sctx, cancel := context.WithTimeout(context.Background(), serveShutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
		log.Warn("requests cut short at shutdown", "err", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	log.Info("stopped")
	return nil
}

// loopbackOnly reports whether listening on addr reaches loopback only: its
// host is localhost or a loopback IP. An empty host (every interface) or
// any other name is not.
func loopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
