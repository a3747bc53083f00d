package httpapi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// TestBodyReadTimeout: a body sent too slowly fails within the timeout,
// with an error that wraps os.ErrDeadlineExceeded; a body read in time
// lifts the deadline, so that the handler may then take longer than the
// timeout without its request being cancelled.
func TestBodyReadTimeout(t *testing.T) {
	const d = 200 * time.Millisecond
	type outcome struct {
		err       error
		cancelled bool
	}
	got := make(chan outcome, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := ReadBody(w, r, 1<<20)
		if err == nil {
			time.Sleep(3 * d) // work that outlasts the body's deadline
		}
		got <- outcome{err, r.Context().Err() != nil}
		if err != nil {
			w.WriteHeader(http.StatusRequestTimeout)
			return
		}
		io.WriteString(w, "done")
	})
	hs := httptest.NewServer(BodyReadTimeout(h, d))
	defer hs.Close()

	// A client that sends 1 byte of a 10-byte body, then nothing.
	c, err := net.Dial("tcp", hs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nx")
	o := <-got
	if !errors.Is(o.err, os.ErrDeadlineExceeded) {
		t.Fatalf("a stalled body: %v", o.err)
	}
	if el := time.Since(start); el > 10*d {
		t.Fatalf("a stalled body held its handler %v", el)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil && resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("status %d", resp.StatusCode)
	}

	// A body sent at once, then a handler slower than the timeout.
	resp, err := http.Post(hs.URL, "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if o := <-got; o.err != nil || o.cancelled || string(body) != "done" {
		t.Fatalf("a slow handler: err %v, cancelled %v, reply %q", o.err, o.cancelled, body)
	}
}
