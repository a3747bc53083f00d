package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/openenv"
	"github.com/agentrl/agentrl/internal/yamlpath"
)

// runServeEnv serves environments over OpenEnv's HTTP and WebSocket
// protocol until ctx ends.
func runServeEnv(ctx context.Context, args []string, s stdio) error {
	fs := flag.NewFlagSet("serve-env", flag.ContinueOnError)
	fs.SetOutput(s.err)
	var (
		envName     = fs.String("env", "", `environment to serve (default: env.name from -config); "all" serves every bundled one under /NAME`)
		configPath  = fs.String("config", "", "YAML run config whose env section configures the environment")
		addr        = fs.String("addr", "127.0.0.1:8000", "listen address; the default binds loopback only")
		apiKey      = fs.String("api-key", "", "bearer token required on every route but /health (default $AGENTRL_API_KEY)")
		maxSessions = fs.Int("max-sessions", 256, "WebSocket sessions open at once, per environment")
		idle        = fs.Duration("idle-timeout", 10*time.Minute, "close a session idle this long (negative: never)")
		maxBytes    = fs.Int64("max-message-bytes", 1<<20, "largest HTTP body or WebSocket message")
		readTimeout = fs.Duration("read-timeout", defaultReadTimeout, "longest time to receive an HTTP request's headers and body")
		verbose     = fs.Bool("v", false, "log session events")
		sets        overrides
	)
	fs.Var(&sets, "set", "environment config override key=value (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(s.err, "usage: trainer serve-env [-env NAME|all | -config FILE] [-set key=value] [-addr HOST:PORT] [-api-key KEY]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return parseError(err)
	}
	switch {
	case fs.NArg() > 0:
		return usageErrorf("unexpected arguments %q", fs.Args())
	case *maxSessions < 1:
		return usageErrorf("-max-sessions must be at least 1, got %d", *maxSessions)
	case *idle == 0:
		return usageErrorf("-idle-timeout must not be 0 (negative: never)")
	case *maxBytes < 1024:
		return usageErrorf("-max-message-bytes must be at least 1024, got %d", *maxBytes)
	case *readTimeout <= 0:
		return usageErrorf("-read-timeout must be positive, got %v", *readTimeout)
	case *envName == "all" && (*configPath != "" || len(sets) > 0):
		return usageErrorf("-env all serves the default configurations; -config and -set need one environment")
	}
	if *apiKey == "" {
		*apiKey = os.Getenv("AGENTRL_API_KEY")
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: level}))
	opts := openenv.Options{MaxSessions: *maxSessions, IdleTimeout: *idle, MaxMessageBytes: *maxBytes, APIKey: *apiKey, Logger: log}

	var handler http.Handler
	var servers []*openenv.Server
	defer func() {
		for _, srv := range servers {
			srv.Close()
		}
	}()
	if *envName == "all" {
		mux := http.NewServeMux()
		var names []string
		for _, name := range envs.Names() {
			if name == "openenv" {
				continue // a client, not an environment to serve
			}
			srv, err := openenv.NewServer(name, nil, opts)
			if err != nil {
				return err
			}
			servers = append(servers, srv)
			names = append(names, name)
			mux.Handle("/"+name+"/", http.StripPrefix("/"+name, srv))
		}
		mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"environments": names})
		})
		mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"status":"healthy"}`))
		})
		handler = mux
	} else {
		doc, err := loadConfigDoc(*configPath, sets, "env.config")
		if err != nil {
			return err
		}
		name := *envName
		if name == "" {
			if n := yamlpath.Get(doc, "env.name"); n != nil {
				name = n.Value
			}
		}
		if name == "" || !slices.Contains(envs.Names(), name) {
			return usageErrorf("give -env NAME (one of %v, or all) or a config with env.name", envs.Names())
		}
		if name == "openenv" {
			return usageErrorf("openenv is the client of a remote server; serve the environment it plays instead")
		}
		srv, err := openenv.NewServer(name, yamlpath.Get(doc, "env.config"), opts)
		if err != nil {
			return err
		}
		servers = append(servers, srv)
		handler = srv
	}

	return serveUntilDone(ctx, *addr, handler, *apiKey, *readTimeout, log, func(a net.Addr) {
		for _, srv := range servers {
			url := "http://" + a.String()
			if len(servers) > 1 {
				url += "/" + srv.Name()
			}
			log.Info("serving", "env", srv.Name(), "url", url, "ws", "ws"+url[len("http"):]+"/ws")
		}
		log.Info("limits", "max_sessions", *maxSessions, "idle_timeout", *idle, "max_message_bytes", *maxBytes, "read_timeout", *readTimeout, "api_key", *apiKey != "")
	}, func() {
		for _, srv := range servers {
			srv.Close() // ends the WebSocket sessions, which Shutdown does not wait for
		}
	})
}
