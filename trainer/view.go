package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"

	"github.com/agentrl/agentrl/internal/atomicdir"
	"github.com/agentrl/agentrl/internal/view"
)

// runView serves a web view of run directories, or exports it as one
// HTML file.
func runView(ctx context.Context, args []string, s stdio) error {
	fs := flag.NewFlagSet("view", flag.ContinueOnError)
	fs.SetOutput(s.err)
	var (
		addr       = fs.String("addr", "127.0.0.1:8080", "address to listen on")
		apiKey     = fs.String("api-key", "", "key the page must carry (in the URL printed, or as a bearer token); required beyond loopback (default $AGENTRL_API_KEY)")
		export     = fs.String("export", "", "write the view as one self-contained HTML file, data inlined, instead of serving it")
		curvesOnly = fs.Bool("curves-only", false, "with -export: leave out the transcripts and collapse readings (a smaller file for a study of many runs)")
	)
	fs.Usage = func() {
		fmt.Fprintln(s.err, "usage: trainer view [-addr HOST:PORT] [-api-key KEY] [-export FILE.html [-curves-only]] [RUN_DIR | 'GLOB' ...]")
		fmt.Fprintln(s.err, "Shows the curves, transcripts, collapse readings and summaries of run directories (default: runs);")
		fmt.Fprintln(s.err, "a directory that is not a run is searched for the runs below it.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return parseError(err)
	}
	patterns := fs.Args()
	if len(patterns) == 0 {
		patterns = []string{"runs"}
	}
	if *apiKey == "" {
		*apiKey = os.Getenv("AGENTRL_API_KEY")
	}
	if *export == "" && *apiKey == "" && !loopbackOnly(*addr) {
		return usageErrorf("the view shows run directories, their transcripts and configs; listening on %s beyond loopback needs an API key (-api-key or $AGENTRL_API_KEY)", *addr)
	}
	if *curvesOnly && *export == "" {
		return usageErrorf("-curves-only goes with -export")
	}
	log := slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv, err := view.New(patterns, view.Options{APIKey: *apiKey, Logger: log})
	if err != nil {
		return err
	}
	if *export != "" {
		return exportView(srv, *export, *curvesOnly, s)
	}
	defer srv.Close()
	return serveUntilDone(ctx, *addr, srv.Handler(), *apiKey, defaultReadTimeout, log, func(a net.Addr) {
		u := url.URL{Scheme: "http", Host: a.String(), Path: "/"}
		if *apiKey != "" {
			u.RawQuery = url.Values{"key": {*apiKey}}.Encode()
		}
		fmt.Fprintf(s.out, "view of %d run(s): %s  (Ctrl-C stops)\n", len(srv.Runs()), u.String())
	}, srv.Close)
}

// exportView writes the view's HTML file, replacing it atomically.
func exportView(srv *view.Server, path string, curvesOnly bool, s stdio) error {
	var b bytes.Buffer
	if err := srv.Export(&b, view.ExportOptions{CurvesOnly: curvesOnly}); err != nil {
		return err
	}
	if err := atomicdir.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "%s: %d run(s), %.1f MB\n", path, len(srv.Runs()), float64(b.Len())/1e6)
	return nil
}
