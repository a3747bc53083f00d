package view

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// browser is headless Chromium driven over the Chrome DevTools protocol:
// one page, commands answered in order.
type browser struct {
	t    testing.TB
	conn *websocket.Conn
	next int
}

// chromium finds a Chromium binary: $AGENTRL_CHROMIUM, or chromium,
// chromium-browser or google-chrome on the PATH.
func chromium() string {
	if p := os.Getenv("AGENTRL_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

var devtoolsRE = regexp.MustCompile(`DevTools listening on (ws://\S+)`)

// startBrowser starts headless Chromium with a window of width × height,
// or skips the test without one (fails with AGENTRL_REQUIRE_CHROMIUM=1).
func startBrowser(t testing.TB, width, height int) *browser {
	t.Helper()
	return launchBrowser(t, width, height)()
}

// launchBrowser starts Chromium as startBrowser does and returns at once;
// the function it returns waits for the browser and connects to its page,
// so that a test can prepare its data while Chromium starts. Call it from
// the test's goroutine.
func launchBrowser(t testing.TB, width, height int) func() *browser {
	t.Helper()
	bin := chromium()
	if bin == "" {
		if os.Getenv("AGENTRL_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("no Chromium (AGENTRL_REQUIRE_CHROMIUM=1): install Debian's chromium or set AGENTRL_CHROMIUM")
		}
		t.Skip("no Chromium on the PATH (apt-get install chromium, or set AGENTRL_CHROMIUM)")
	}
	profile, err := os.MkdirTemp("", "view-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
		"--no-default-browser-check", "--disable-extensions", "--mute-audio", "--remote-debugging-port=0",
		"--user-data-dir="+profile, fmt.Sprintf("--window-size=%d,%d", width, height), "about:blank")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		// Browser.close (sent below, once connected) ends Chromium and its
		// helper processes; the kill is for a browser that does not answer.
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		for range 20 { // helpers may still be writing the profile
			if os.RemoveAll(profile) == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := devtoolsRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		cmd.Wait()
		close(exited)
	}()
	return func() *browser {
		t.Helper()
		var browserURL string
		select {
		case browserURL = <-found:
		case <-exited:
			t.Fatal("Chromium exited before it opened its DevTools port")
		case <-time.After(90 * time.Second):
			t.Fatal("Chromium did not open its DevTools port in 90s")
		}
		return connect(t, browserURL, width, height)
	}
}

// connect attaches to the page of the Chromium whose DevTools endpoint is
// browserURL.
func connect(t testing.TB, browserURL string, width, height int) *browser {
	t.Helper()
	host := strings.TrimPrefix(browserURL, "ws://")
	host = host[:strings.IndexByte(host, '/')]
	res, err := http.Get("http://" + host + "/json/list")
	if err != nil {
		t.Fatal(err)
	}
	var targets []struct {
		Type string `json:"type"`
		URL  string `json:"webSocketDebuggerUrl"`
	}
	err = json.NewDecoder(res.Body).Decode(&targets)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var pageURL string
	for _, tg := range targets {
		if tg.Type == "page" {
			pageURL = tg.URL
		}
	}
	if pageURL == "" {
		t.Fatalf("no page among Chromium's targets %+v", targets)
	}
	conn, _, err := websocket.Dial(context.Background(), pageURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(256 << 20)
	b := &browser{t: t, conn: conn}
	t.Cleanup(func() {
		b.try("Browser.close", nil, nil)
		conn.CloseNow()
	})
	b.call("Page.enable", nil, nil)
	// Uncaught errors are kept for the messages of failed waits.
	b.call("Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": `
window.addEventListener('error', (e) => { window.viewError = e.message + ' at ' + e.filename + ':' + e.lineno; });
window.addEventListener('unhandledrejection', (e) => { window.viewError = String(e.reason && e.reason.stack || e.reason); });`}, nil)
	b.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
	return b
}

// call sends a command and decodes its result into result (when not nil).
func (b *browser) call(method string, params, result any) {
	b.t.Helper()
	if err := b.try(method, params, result); err != nil {
		b.t.Fatal(err)
	}
}

func (b *browser) try(method string, params, result any) error {
	b.next++
	id := b.next
	msg, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := b.conn.Write(ctx, websocket.MessageText, msg); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	for {
		_, data, err := b.conn.Read(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		var reply struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(data, &reply); err != nil {
			return err
		}
		if reply.ID != id {
			continue // an event
		}
		if reply.Error != nil {
			return fmt.Errorf("%s: %s", method, reply.Error.Message)
		}
		if result != nil {
			return json.Unmarshal(reply.Result, result)
		}
		return nil
	}
}

// navigate loads url in the page.
func (b *browser) navigate(url string) {
	b.t.Helper()
	b.call("Page.navigate", map[string]any{"url": url}, nil)
}

// eval evaluates a JavaScript expression (awaiting a promise) and
// decodes its value into result.
func (b *browser) eval(expr string, result any) error {
	var out struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := b.try("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &out); err != nil {
		return err
	}
	if out.Exception != nil {
		return fmt.Errorf("%s: %s %s", expr, out.Exception.Text, out.Exception.Exception.Description)
	}
	if result == nil || len(out.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(out.Result.Value, result)
}

// must is eval that fails the test on an error.
func (b *browser) must(expr string, result any) {
	b.t.Helper()
	if err := b.eval(expr, result); err != nil {
		b.t.Fatal(err)
	}
}

// waitFor polls a JavaScript condition until it holds, failing the test
// after timeout with what the page shows.
func (b *browser) waitFor(cond string, timeout time.Duration) time.Duration {
	b.t.Helper()
	start := time.Now()
	for {
		var ok bool
		if err := b.eval("!!("+cond+")", &ok); err == nil && ok {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			var state struct {
				Data  map[string]string
				Text  string
				Error string
			}
			b.eval(`({Data: {...document.body.dataset}, Text: document.getElementById('main').innerHTML.slice(0, 300) + ' … ' + document.body.innerText.slice(0, 300), Error: window.viewError || ''})`, &state)
			b.t.Fatalf("waited %v for %s; the page (%v, %s) shows:\n%s", timeout, cond, state.Data, state.Error, state.Text)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// screenshot saves the page as a PNG in each of dirs, at most maxHeight
// pixels of it.
func (b *browser) screenshot(name string, maxHeight int, dirs ...string) {
	b.t.Helper()
	var size struct{ W, H int }
	b.must(`({W: document.documentElement.clientWidth, H: Math.min(document.documentElement.scrollHeight, `+fmt.Sprint(maxHeight)+`)})`, &size)
	var out struct {
		Data string `json:"data"`
	}
	b.call("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true,
		"clip": map[string]any{"x": 0, "y": 0, "width": size.W, "height": size.H, "scale": 1}}, &out)
	png, err := base64.StdEncoding.DecodeString(out.Data)
	if err != nil {
		b.t.Fatal(err)
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name), png, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
}

// mouse moves the pointer to (x, y) of the viewport.
func (b *browser) mouse(x, y float64) {
	b.t.Helper()
	b.call("Input.dispatchMouseEvent", map[string]any{"type": "mouseMoved", "x": x, "y": y}, nil)
}
