package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServeBeyondLoopbackNeedsKey: the Tinker API (on by default) trains
// and writes files, so serving it beyond loopback without an API key is
// refused, as -lora-dir is; -tinker=false or a key lets the start go on
// (here to the missing checkpoint).
func TestServeBeyondLoopbackNeedsKey(t *testing.T) {
	t.Setenv("AGENTRL_API_KEY", "")
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "example.com:8000"} {
		code, _, errOut := runCLI(t, "", "serve", "-checkpoint", "x", "-addr", addr)
		if code != 2 || !strings.Contains(errOut, "needs an API key") || !strings.Contains(errOut, "Tinker") {
			t.Errorf("serve -addr %s without a key: exit %d:\n%s", addr, code, errOut)
		}
	}
	for _, extra := range [][]string{{"-tinker=false"}, {"-api-key", "k"}} {
		args := append([]string{"serve", "-checkpoint", "x", "-addr", "0.0.0.0:0"}, extra...)
		code, _, errOut := runCLI(t, "", args...)
		if code != 1 || !strings.Contains(errOut, "does not exist") {
			t.Errorf("%q: exit %d, want 1 at the missing checkpoint:\n%s", args, code, errOut)
		}
	}
	// Loopback needs no key.
	code, _, errOut := runCLI(t, "", "serve", "-checkpoint", "x", "-addr", "127.0.0.1:0")
	if code != 1 || !strings.Contains(errOut, "does not exist") {
		t.Errorf("loopback without a key: exit %d:\n%s", code, errOut)
	}
}

// stalledBody sends a POST to base+path whose body stops after one byte
// of ten, and returns how long the server took to answer or close, and
// its status (0 when it closed without an answer).
func stalledBody(t *testing.T, base, path string) (time.Duration, int) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{", path)
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return time.Since(start), 0
	}
	resp.Body.Close()
	return time.Since(start), resp.StatusCode
}

// TestServeReadTimeout: a request body that stalls is cut off after
// -read-timeout on every route of serve (/v1 and the Tinker API) and of
// serve-env, with a 408, instead of holding its connection.
func TestServeReadTimeout(t *testing.T) {
	rs := startServe(t, writeTinyCheckpoint(t), "-read-timeout", "300ms")
	for _, path := range []string{"/v1/completions", "/api/v1/create_session"} {
		if el, status := stalledBody(t, rs.base, path); el > 5*time.Second || status != http.StatusRequestTimeout {
			t.Errorf("%s: a stalled body answered %d after %v", path, status, el)
		}
	}
	rs.stop(t)

	urls, stop := startServeEnv(t, "-env", "sokoban", "-read-timeout", "300ms")
	if el, status := stalledBody(t, urls[0], "/reset"); el > 5*time.Second || status != http.StatusRequestTimeout {
		t.Errorf("serve-env /reset: a stalled body answered %d after %v", status, el)
	}
	if code, out := stop(); code != 0 {
		t.Errorf("serve-env exit %d: %s", code, out)
	}
}
