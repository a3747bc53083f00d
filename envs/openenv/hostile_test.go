package openenv

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// openFiles counts this process's open file descriptors.
func openFiles(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("counting open files needs /proc: %v", err)
	}
	return len(ents)
}

// vanish opens a WebSocket session on hs, optionally sends a message,
// and drops the TCP connection without a close frame, as a client that
// crashes or loses its network does.
func vanish(t *testing.T, hs *httptest.Server, message string) {
	t.Helper()
	c, err := net.Dial("tcp", hs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v %v", resp, err)
	}
	if message != "" {
		// One masked text frame (mask 0: the payload as is).
		frame := append([]byte{0x81, 0x80 | byte(len(message)), 0, 0, 0, 0}, message...)
		c.Write(frame)
	}
}

// waitFiles waits until the process has at most want open files.
func waitFiles(t *testing.T, want int) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := openFiles(t)
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settledFiles returns the count of open files once it stops falling.
func settledFiles(t *testing.T) int {
	t.Helper()
	n := openFiles(t)
	for range 100 {
		time.Sleep(20 * time.Millisecond)
		m := openFiles(t)
		if m >= n {
			return m
		}
		n = m
	}
	return n
}

// TestVanishingClientsLeakNothing: clients that drop their TCP connection
// without a close frame (1,150 of them once left serve-env failing with
// "accept4: too many open files") must leave no open file and no session
// behind.
func TestVanishingClientsLeakNothing(t *testing.T) {
	s, hs := serve(t, "sokoban", Options{})
	// Warm up: the listener, the client's pools and the runtime's own
	// files are open before the count starts.
	vanish(t, hs, "")
	before := settledFiles(t)
	const clients = 60
	for i := range clients {
		msg := ""
		if i%2 == 1 {
			msg = `{"type":"reset","data":{"seed":1}}`
		}
		vanish(t, hs, msg)
	}
	if n := waitFiles(t, before+2); n > before+2 {
		t.Fatalf("%d files open after %d clients vanished, %d before", n, clients, before)
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.ActiveSessions() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := s.ActiveSessions(); n != 0 {
		t.Fatalf("%d sessions still open", n)
	}
}

// heapBound is the most live heap TestHostileInputs lets the server hold.
const heapBound = 128 << 20

// TestHostileInputs sends what a hostile client can send a serve-env
// server, scaled down: vanishing sessions, sessions past the cap, an
// oversized message and body, then checks the server serves and its heap
// stayed within heapBound.
func TestHostileInputs(t *testing.T) {
	old := debug.SetMemoryLimit(heapBound)
	defer debug.SetMemoryLimit(old)
	runtime.GC()
	var peak atomic.Uint64
	stop := make(chan struct{})
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()

	s, hs := serve(t, "sokoban", Options{MaxSessions: 8, MaxMessageBytes: 64 << 10})
	vanish(t, hs, "")
	before := settledFiles(t)
	for range 40 {
		vanish(t, hs, `{"type":"reset","data":{}}`)
	}
	// Sessions past the cap are refused, not queued.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"
	var held []*websocket.Conn
	for range 12 {
		c, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	// A message over the limit ends its session (status 1009).
	big := held[0]
	big.Write(ctx, websocket.MessageText, []byte(`{"type":"step","data":"`+strings.Repeat("x", 128<<10)+`"}`))
	if _, _, err := big.Read(ctx); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Errorf("an oversized message: %v", err)
	}
	for _, c := range held {
		c.CloseNow()
	}
	if code, _ := post(t, hs, "/reset", `{"seed":`+strings.Repeat("1", 128<<10)+`}`); code != http.StatusRequestEntityTooLarge {
		t.Errorf("an oversized body: %d", code)
	}
	if n := waitFiles(t, before+2); n > before+2 {
		t.Errorf("%d files open, %d before", n, before)
	}
	// Still serving.
	if code, m := get(t, hs, "/health"); code != 200 || m["status"] != "healthy" {
		t.Fatalf("/health: %d %v", code, m)
	}
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.Write(ctx, websocket.MessageText, []byte(`{"type":"reset","data":{"seed":3}}`))
	if _, data, err := c.Read(ctx); err != nil || !strings.Contains(string(data), `"observation"`) {
		t.Fatalf("reset after the hostile clients: %s %v", data, err)
	}
	close(stop)
	if p := peak.Load(); p > heapBound {
		t.Fatalf("the live heap peaked at %d MiB, over %d MiB", p>>20, heapBound>>20)
	}
	if n := s.ActiveSessions(); n > 1 {
		t.Errorf("%d sessions open", n)
	}
}
