package openenv

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentrl/agentrl/envs"
	_ "github.com/agentrl/agentrl/envs/builtin"
)

// serve starts a server for env on loopback.
func serve(t *testing.T, env string, opts Options) (*Server, *httptest.Server) {
	t.Helper()
	s, err := NewServer(env, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); s.Close() })
	return s, hs
}

// post sends body to path and decodes the JSON reply.
func post(t *testing.T, hs *httptest.Server, path, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(hs.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return decodeReply(t, resp)
}

func get(t *testing.T, hs *httptest.Server, path string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(hs.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	return decodeReply(t, resp)
}

func decodeReply(t *testing.T, resp *http.Response) (int, map[string]any) {
	t.Helper()
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: reply %q is not a JSON object", resp.Request.URL.Path, data)
	}
	return resp.StatusCode, m
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestHTTPRoutes(t *testing.T) {
	_, hs := serve(t, "sokoban", Options{})
	if code, m := get(t, hs, "/health"); code != 200 || m["status"] != "healthy" {
		t.Errorf("/health: %d %v", code, m)
	}
	if code, m := get(t, hs, "/metadata"); code != 200 || m["name"] != "sokoban" || m["description"] == "" {
		t.Errorf("/metadata: %d %v", code, m)
	}

	// reset: the reference's ResetResponse has exactly observation, reward, done.
	code, m := post(t, hs, "/reset", `{"seed": 7, "episode_id": "ep-1"}`)
	if code != 200 || !reflect.DeepEqual(keys(m), []string{"done", "observation", "reward"}) || m["reward"] != nil || m["done"] != false {
		t.Fatalf("/reset: %d %v", code, m)
	}
	obs := m["observation"].(map[string]any)
	want := []string{"action_effective", "action_valid", "actions", "instruction", "metrics", "success", "text"}
	if !reflect.DeepEqual(keys(obs), want) {
		t.Errorf("observation fields %v, want %v", keys(obs), want)
	}
	local, _ := envs.NewFactory("sokoban", nil)
	env, _ := local.New()
	text, _ := env.Reset(7)
	if obs["text"] != text || obs["instruction"] != env.Instruction() {
		t.Errorf("observation %v, want the text of seed 7:\n%s", obs, text)
	}
	// An empty body is a reset with a random seed.
	resp, err := http.Post(hs.URL+"/reset", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := decodeReply(t, resp); code != 200 {
		t.Errorf("empty /reset: %d", code)
	}

	// Validation errors: 422 with pydantic's list, naming the field.
	for _, c := range []struct{ path, body, loc string }{
		{"/reset", `{"seed": -1}`, "seed"},
		{"/reset", `{"seed": "x"}`, "seed"},
		{"/reset", `{"seed": 1.5}`, "seed"},
		{"/reset", `{"episode_id": "` + strings.Repeat("x", 256) + `"}`, "episode_id"},
		{"/reset", `[1, 2]`, "body"},
		{"/reset", `{"seed": 1} {"seed": 2}`, "body"},
		{"/step", `{}`, "action"},
		{"/step", `{"action": {"message": "Up", "force": true}}`, "force"},
		{"/step", `{"action": {}}`, "message"},
		{"/step", `{"action": {"message": 3}}`, "message"},
		{"/step", `{"action": {"message": "Up"}, "timeout_s": 0}`, "timeout_s"},
	} {
		code, m := post(t, hs, c.path, c.body)
		detail, _ := m["detail"].([]any)
		if code != 422 || len(detail) == 0 || !strings.Contains(jsonString(detail), c.loc) {
			t.Errorf("%s %s: %d %v, want 422 naming %s", c.path, c.body, code, m, c.loc)
		}
	}
	// Extra reset parameters the environment does not know are ignored, as
	// the reference filters them by reset's signature.
	if code, _ := post(t, hs, "/reset", `{"seed": 1, "render_mode": "ansi"}`); code != 200 {
		t.Errorf("/reset with an unknown parameter: %d", code)
	}
	// HTTP /step runs on a fresh environment: agentrl's need a reset.
	if code, m := post(t, hs, "/step", `{"action": {"message": "Up"}, "request_id": "r1", "verbose": true}`); code != 500 || !strings.Contains(m["detail"].(string), "/ws") {
		t.Errorf("/step: %d %v", code, m)
	}
	if code, m := get(t, hs, "/state"); code != 200 || m["episode_id"] != nil || m["step_count"] != 0.0 {
		t.Errorf("/state: %d %v", code, m)
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestSchema(t *testing.T) {
	_, hs := serve(t, "frozenlake", Options{})
	code, m := get(t, hs, "/schema")
	if code != 200 || !reflect.DeepEqual(keys(m), []string{"action", "observation", "state"}) {
		t.Fatalf("/schema: %d %v", code, keys(m))
	}
	action := m["action"].(map[string]any)
	if action["type"] != "object" || action["additionalProperties"] != false || jsonString(action["required"]) != `["message"]` {
		t.Errorf("action schema %v", action)
	}
	obs := m["observation"].(map[string]any)["properties"].(map[string]any)
	for _, f := range []string{"done", "reward", "metadata", "text", "actions", "success", "action_valid", "metrics"} {
		if _, ok := obs[f]; !ok {
			t.Errorf("observation schema lacks %q", f)
		}
	}
	state := m["state"].(map[string]any)
	if _, ok := state["additionalProperties"]; ok {
		t.Errorf("state schema forbids extra fields; the reference's State allows them")
	}
	if p := state["properties"].(map[string]any); p["step_count"].(map[string]any)["type"] != "integer" {
		t.Errorf("state schema %v", p)
	}
}

// wsConn is a test client speaking raw messages.
type wsConn struct {
	t    *testing.T
	conn *websocket.Conn
}

func dialWS(t *testing.T, hs *httptest.Server, header http.Header) *wsConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/ws", &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	return &wsConn{t: t, conn: conn}
}

func (c *wsConn) send(raw string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.conn.Write(ctx, websocket.MessageText, []byte(raw)); err != nil {
		c.t.Fatal(err)
	}
}

func (c *wsConn) recv() map[string]any {
	c.t.Helper()
	m, err := c.read()
	if err != nil {
		c.t.Fatal(err)
	}
	return m
}

func (c *wsConn) read() (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, data, err := c.conn.Read(ctx)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		c.t.Fatalf("server message %q is not JSON", data)
	}
	return m, nil
}

func (c *wsConn) call(raw string) map[string]any {
	c.t.Helper()
	c.send(raw)
	return c.recv()
}

// errorCode is the code of an error message, "" for others.
func errorCode(m map[string]any) string {
	if m["type"] != "error" {
		return ""
	}
	code, _ := m["data"].(map[string]any)["code"].(string)
	return code
}

func TestWebSocketEpisode(t *testing.T) {
	srv, hs := serve(t, "sokoban", Options{})
	c := dialWS(t, hs, nil)
	local, _ := envs.NewFactory("sokoban", nil)
	env, _ := local.New()
	text, _ := env.Reset(11)

	m := c.call(`{"type": "reset", "data": {"seed": 11, "episode_id": "e11"}}`)
	data := m["data"].(map[string]any)
	if m["type"] != "observation" || data["observation"].(map[string]any)["text"] != text || data["reward"] != nil {
		t.Fatalf("reset: %v", m)
	}
	st := c.call(`{"type": "state"}`)
	if sd := st["data"].(map[string]any); st["type"] != "state" || sd["episode_id"] != "e11" || sd["step_count"] != 0.0 || sd["seed"] != 11.0 {
		t.Errorf("state: %v", st)
	}
	for _, a := range []string{"Up", "Left", "nonsense"} {
		want, _ := env.Step(a)
		m := c.call(`{"type": "step", "data": {"message": "` + a + `"}}`)
		d := m["data"].(map[string]any)
		o := d["observation"].(map[string]any)
		if o["text"] != want.Observation || d["reward"] != want.Reward || d["done"] != want.Done || o["action_valid"] != want.Info.ActionValid {
			t.Errorf("step %q: %v, want %+v", a, m, want)
		}
	}
	if sd := c.call(`{"type": "state"}`)["data"].(map[string]any); sd["step_count"] != 3.0 {
		t.Errorf("state after 3 steps: %v", sd)
	}
	if srv.ActiveSessions() != 1 {
		t.Errorf("%d active sessions, want 1", srv.ActiveSessions())
	}
	c.send(`{"type": "close"}`)
	if _, err := c.read(); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Errorf("after close: %v, want a normal closure", err)
	}
	waitSessions(t, srv, 0)
}

func waitSessions(t *testing.T, srv *Server, want int) {
	t.Helper()
	for range 200 {
		if srv.ActiveSessions() == want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%d active sessions, want %d", srv.ActiveSessions(), want)
}

func TestWebSocketErrors(t *testing.T) {
	_, hs := serve(t, "frozenlake", Options{MaxMessageBytes: 4096})
	c := dialWS(t, hs, nil)
	for _, e := range []struct{ msg, code string }{
		{`{"type": "step", "data": {"message": "Left"}}`, CodeExecution}, // before any reset
		{`not json`, CodeInvalidJSON},
		{`{"type": "jump"}`, CodeUnknownType},
		{`{"data": {}}`, CodeUnknownType},
		{`[1, 2]`, CodeValidation},
		{`{"type": "step"}`, CodeValidation},
		{`{"type": "step", "data": {"message": "Left", "speed": 2}}`, CodeValidation},
		{`{"type": "step", "data": "Left"}`, CodeValidation},
		{`{"type": "state", "data": {}}`, CodeValidation},
		{`{"type": "reset", "data": {"seed": "seven"}}`, CodeValidation},
		{`{"type": "reset", "data": {"seed": 1}, "extra": 1}`, CodeValidation},
		{`{"type": "reset", "data": {"split": "nope", "index": 0}}`, CodeValidation},
		{`{"type": "reset", "data": {"level": "not a map"}}`, CodeValidation},
		{`{"type": "reset", "data": {"env_config": {"size": "big"}}}`, CodeValidation},
	} {
		m := c.call(e.msg)
		if got := errorCode(m); got != e.code {
			t.Errorf("%s: %v, want %s", e.msg, m, e.code)
		} else if msg, _ := m["data"].(map[string]any)["message"].(string); msg == "" {
			t.Errorf("%s: error without a message: %v", e.msg, m)
		}
	}
	// The session survives its errors.
	if m := c.call(`{"type": "reset", "data": {"seed": 3}}`); m["type"] != "observation" {
		t.Fatalf("reset after errors: %v", m)
	}
	// A message over the limit ends the session with 1009.
	c.send(`{"type": "step", "data": {"message": "` + strings.Repeat("x", 5000) + `"}}`)
	if _, err := c.read(); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Errorf("oversize message: %v, want close status 1009", err)
	}

	// A binary message is not part of the protocol: SESSION_ERROR, closed.
	b := dialWS(t, hs, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.conn.Write(ctx, websocket.MessageBinary, []byte(`{"type":"state"}`)); err != nil {
		t.Fatal(err)
	}
	if m := b.recv(); errorCode(m) != CodeSession {
		t.Errorf("binary message: %v", m)
	}
	if _, err := b.read(); websocket.CloseStatus(err) != websocket.StatusUnsupportedData {
		t.Errorf("after a binary message: %v", err)
	}
}

func TestCapacityAndDisconnect(t *testing.T) {
	srv, hs := serve(t, "sokoban", Options{MaxSessions: 2})
	a, b := dialWS(t, hs, nil), dialWS(t, hs, nil)
	a.call(`{"type": "reset", "data": {"seed": 1}}`)
	b.call(`{"type": "reset", "data": {"seed": 2}}`)
	over := dialWS(t, hs, nil)
	m := over.recv()
	d, _ := m["data"].(map[string]any)
	if errorCode(m) != CodeCapacityReached || d["active_sessions"] != 2.0 || d["max_sessions"] != 2.0 {
		t.Errorf("third session: %v", m)
	}
	if _, err := over.read(); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Errorf("refused session not closed: %v", err)
	}
	// A client that vanishes mid-episode frees its place.
	a.conn.CloseNow()
	waitSessions(t, srv, 1)
	c := dialWS(t, hs, nil)
	if m := c.call(`{"type": "reset", "data": {"seed": 3}}`); m["type"] != "observation" {
		t.Errorf("after a disconnect: %v", m)
	}
	if m := b.call(`{"type": "step", "data": {"message": "Up"}}`); m["type"] != "observation" {
		t.Errorf("the other session after a disconnect: %v", m)
	}
}

func TestIdleSessionsExpire(t *testing.T) {
	srv, hs := serve(t, "sokoban", Options{IdleTimeout: 100 * time.Millisecond})
	c := dialWS(t, hs, nil)
	c.call(`{"type": "reset", "data": {"seed": 1}}`)
	start := time.Now()
	_, err := c.read()
	if websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Errorf("idle session: %v, want close status 1001", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("idle session closed after %v", d)
	}
	waitSessions(t, srv, 0)
}

func TestAPIKey(t *testing.T) {
	_, hs := serve(t, "sokoban", Options{APIKey: "s3cret"})
	if code, _ := get(t, hs, "/health"); code != 200 {
		t.Errorf("/health with a key set: %d", code)
	}
	if code, _ := post(t, hs, "/reset", `{}`); code != 401 {
		t.Errorf("/reset without the key: %d", code)
	}
	req, _ := http.NewRequest("POST", hs.URL+"/reset", strings.NewReader(`{"seed": 1}`))
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := decodeReply(t, resp); code != 200 {
		t.Errorf("/reset with the key: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, resp, err = websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/ws", nil)
	if err == nil || resp == nil || resp.StatusCode != 401 {
		t.Errorf("/ws without the key: %v %v", err, resp)
	}
	c := dialWS(t, hs, http.Header{"Authorization": {"Bearer s3cret"}})
	if m := c.call(`{"type": "reset", "data": {"seed": 1}}`); m["type"] != "observation" {
		t.Errorf("/ws with the key: %v", m)
	}
}

func TestBodyLimit(t *testing.T) {
	_, hs := serve(t, "sokoban", Options{MaxMessageBytes: 1024})
	code, m := post(t, hs, "/reset", `{"episode_id": "`+strings.Repeat("x", 2000)+`"}`)
	if code != 413 || !strings.Contains(m["detail"].(string), "1024") {
		t.Errorf("oversize body: %d %v", code, m)
	}
}

func TestTasksAndSplits(t *testing.T) {
	_, hs := serve(t, "sokoban", Options{})
	resp, err := http.Get(hs.URL + "/splits")
	if err != nil {
		t.Fatal(err)
	}
	var splits []map[string]any
	json.NewDecoder(resp.Body).Decode(&splits)
	resp.Body.Close()
	if len(splits) != 3 || splits[1]["name"] != "validation" || splits[1]["type"] != "validation" {
		t.Errorf("/splits: %v", splits)
	}
	if code, m := post(t, hs, "/num_tasks", `{"split": "validation"}`); code != 200 || m["num_tasks"] != 256.0 {
		t.Errorf("/num_tasks: %d %v", code, m)
	}
	code, task := post(t, hs, "/get_task", `{"split": "validation", "index": 3}`)
	if code != 200 || task["id"] != "validation-3" || task["seed"] != float64(1<<40+3) {
		t.Errorf("/get_task: %d %v", code, task)
	}
	if code, m := post(t, hs, "/get_task_range", `{"split": "test", "start": 10, "stop": 13}`); code != 200 || len(m["tasks"].([]any)) != 3 {
		t.Errorf("/get_task_range: %d %v", code, m)
	}
	if code, m := post(t, hs, "/tasks", `{"split": "validation"}`); code != 200 || len(m["tasks"].([]any)) != 256 || m["env_name"] != "sokoban" {
		t.Errorf("/tasks: %d", code)
	}
	for _, body := range []string{`{"split": "nope"}`, `{"split": "validation", "index": 256}`} {
		if code, _ := post(t, hs, "/get_task", body); code != 400 {
			t.Errorf("/get_task %s: %d, want 400", body, code)
		}
	}
	// A task's reset is the reset of its seed.
	_, bySeed := post(t, hs, "/reset", `{"seed": `+jsonString(task["seed"])+`}`)
	_, byTask := post(t, hs, "/reset", `{"split": "validation", "index": 3}`)
	if !reflect.DeepEqual(bySeed, byTask) {
		t.Errorf("task reset %v differs from the seed's %v", byTask, bySeed)
	}
	if code, _ := post(t, hs, "/reset", `{"split": "validation", "index": 3, "seed": 1}`); code != 422 {
		t.Errorf("task and seed together: %d, want 422", code)
	}
}

func TestResetWithLevelAndEnvConfig(t *testing.T) {
	_, hs := serve(t, "sokoban", Options{})
	const level = "#######\n#P_X_O#\n#######"
	_, m := post(t, hs, "/reset", `{"level": `+jsonString(level)+`}`)
	local, _ := envs.NewFactory("sokoban", nil)
	env, _ := local.New()
	want, _ := env.(envs.LevelLoader).LoadLevel(level)
	if m["observation"].(map[string]any)["text"] != want {
		t.Errorf("level reset: %v, want\n%s", m, want)
	}
	c := dialWS(t, hs, nil)
	m = c.call(`{"type": "reset", "data": {"seed": 5, "env_config": {"dim_x": 8, "dim_y": 8}}}`)
	big, _ := envs.NewFactoryYAML("sokoban", []byte("dim_x: 8\ndim_y: 8"))
	benv, _ := big.New()
	text, _ := benv.Reset(5)
	if m["data"].(map[string]any)["observation"].(map[string]any)["text"] != text {
		t.Errorf("env_config reset: %v, want\n%s", m, text)
	}
	if m := c.call(`{"type": "reset", "data": {"env_config": {"no_such_key": 1}}}`); errorCode(m) != CodeValidation ||
		!strings.Contains(jsonString(m), "no_such_key") {
		t.Errorf("bad env_config: %v", m)
	}
}

func TestServerClose(t *testing.T) {
	srv, hs := serve(t, "sokoban", Options{})
	c := dialWS(t, hs, nil)
	c.call(`{"type": "reset", "data": {"seed": 1}}`)
	srv.Close()
	if _, err := c.read(); err == nil {
		t.Error("session still open after Close")
	}
	waitSessions(t, srv, 0)
	d := dialWS(t, hs, nil)
	if m := d.recv(); errorCode(m) != CodeSession {
		t.Errorf("session after Close: %v", m)
	}
}
