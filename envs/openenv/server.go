package openenv

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"go.yaml.in/yaml/v3"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/internal/httpapi"
)

// Options configure a Server. The zero value is usable: see each field.
type Options struct {
	// MaxSessions bounds the WebSocket sessions open at once (default 256;
	// the reference's max_concurrent_envs). One more is refused with
	// CAPACITY_REACHED.
	MaxSessions int
	// IdleTimeout closes a session that sent nothing for this long
	// (default 10 minutes; negative: never; the reference's
	// session_timeout).
	IdleTimeout time.Duration
	// MaxMessageBytes bounds an HTTP body and a WebSocket message (default
	// 1 MiB). Bigger bodies get 413; bigger messages close the session
	// with status 1009.
	MaxMessageBytes int64
	// APIKey, when set, is required on every route but /health, as
	// "Authorization: Bearer <key>".
	APIKey string
	// Splits are the task sets of /splits and reset's split+index
	// (default DefaultSplits).
	Splits []Split
	// Version is reported by /metadata.
	Version string
	// Logger receives session events (default: discard).
	Logger *slog.Logger
}

// Server serves one environment kind over OpenEnv's protocol. It is an
// http.Handler; Close ends its sessions.
type Server struct {
	name    string
	config  *yaml.Node
	factory *envs.Factory
	opts    Options
	splits  splitSet
	log     *slog.Logger
	mux     *http.ServeMux

	mu       sync.Mutex
	sessions map[*session]struct{}
	closed   bool
	stop     chan struct{}
	reaped   sync.WaitGroup
}

// session is one WebSocket connection and its environment.
type session struct {
	ep         *episode
	conn       *websocket.Conn
	lastActive time.Time
	ending     bool
}

// end closes the session's connection with a close frame (status 1001);
// its read loop then returns and releases the session. Called with s.mu
// held; the close handshake runs in the background.
func (ss *session) end(reason string) {
	if ss.ending {
		return
	}
	ss.ending = true
	go ss.conn.Close(websocket.StatusGoingAway, reason)
}

// NewServer builds a server for the registered environment name with its
// YAML configuration (nil: the defaults).
func NewServer(name string, config *yaml.Node, opts Options) (*Server, error) {
	factory, err := envs.NewFactory(name, config)
	if err != nil {
		return nil, err
	}
	if opts.MaxSessions == 0 {
		opts.MaxSessions = 256
	}
	if opts.MaxSessions < 1 {
		return nil, fmt.Errorf("openenv: MaxSessions must be positive, got %d", opts.MaxSessions)
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = 10 * time.Minute
	}
	if opts.MaxMessageBytes == 0 {
		opts.MaxMessageBytes = 1 << 20
	}
	if opts.Splits == nil {
		opts.Splits = DefaultSplits()
	}
	if err := splitSet(opts.Splits).validate(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if config == nil {
		config = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	s := &Server{name: name, config: config, factory: factory, opts: opts, splits: opts.Splits, log: opts.Logger,
		sessions: map[*session]struct{}{}, stop: make(chan struct{})}
	s.routes()
	if opts.IdleTimeout > 0 {
		s.reaped.Add(1)
		go s.reap()
	}
	return s, nil
}

// Name is the served environment's registered name.
func (s *Server) Name() string { return s.name }

// ActiveSessions is the number of open WebSocket sessions.
func (s *Server) ActiveSessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Close refuses new sessions and ends the open ones.
func (s *Server) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stop)
		for ss := range s.sessions {
			ss.end("the server is shutting down")
		}
	}
	s.mu.Unlock()
	s.reaped.Wait()
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("POST /reset", s.handleReset)
	m.HandleFunc("POST /step", s.handleStep)
	m.HandleFunc("GET /state", s.handleState)
	m.HandleFunc("GET /schema", s.handleSchema)
	m.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "healthy"})
	})
	m.HandleFunc("GET /metadata", s.handleMetadata)
	m.HandleFunc("GET /splits", s.handleSplits)
	m.HandleFunc("POST /tasks", s.handleTasks)
	m.HandleFunc("POST /num_tasks", s.handleNumTasks)
	m.HandleFunc("POST /get_task", s.handleGetTask)
	m.HandleFunc("POST /get_task_range", s.handleTaskRange)
	m.HandleFunc("GET /ws", s.handleWS)
	s.mux = m
}

// ServeHTTP implements http.Handler: the API key check, then the routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.opts.APIKey != "" && r.URL.Path != "/health" {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.opts.APIKey)) != 1 {
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeDetail(w, http.StatusUnauthorized, "missing or wrong API key (Authorization: Bearer <key>)")
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

// writeJSON writes v, or FastAPI's 500 when v does not encode (a NaN
// reward, say).
func writeJSON(w http.ResponseWriter, status int, v any) {
	if err := httpapi.WriteJSON(w, status, v); err != nil {
		writeDetail(w, http.StatusInternalServerError, "encoding the reply failed")
	}
}

// writeDetail answers FastAPI's error shape, {"detail": …}.
func writeDetail(w http.ResponseWriter, status int, detail any) {
	writeJSON(w, status, map[string]any{"detail": detail})
}

// writeError answers a request error: 422 with pydantic's list for a
// validation error, 500 otherwise.
func writeError(w http.ResponseWriter, err error) {
	var v *validationError
	if errors.As(err, &v) {
		writeDetail(w, http.StatusUnprocessableEntity, v.detail())
		return
	}
	writeDetail(w, http.StatusInternalServerError, err.Error())
}

// readBody reads a bounded request body as one JSON object; an empty body
// is {} when allowEmpty.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, allowEmpty bool) (map[string]json.RawMessage, bool) {
	data, err := httpapi.ReadBody(w, r, s.opts.MaxMessageBytes)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeDetail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", s.opts.MaxMessageBytes))
		return nil, false
	case errors.Is(err, os.ErrDeadlineExceeded):
		writeDetail(w, http.StatusRequestTimeout, "the request body did not arrive in time")
		return nil, false
	case err != nil:
		writeDetail(w, http.StatusBadRequest, "reading the body: "+err.Error())
		return nil, false
	}
	if allowEmpty && len(strings.TrimSpace(string(data))) == 0 {
		return map[string]json.RawMessage{}, true
	}
	m, err := decodeObject(data, "body")
	if err != nil {
		if !isValidation(err) {
			err = invalid("body", "JSON decode error: %v", err)
		}
		writeError(w, err)
		return nil, false
	}
	return m, true
}

func (s *Server) handleReset(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readBody(w, r, true)
	if !ok {
		return
	}
	p, err := parseReset(body, "body")
	if err != nil {
		writeError(w, err)
		return
	}
	ep, err := s.newEpisode()
	if err != nil {
		writeDetail(w, http.StatusInternalServerError, err.Error())
		return
	}
	defer ep.close()
	res, err := ep.reset(p)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// handleStep runs one action on a fresh environment, as the reference's
// HTTP /step does: agentrl's environments need a reset first, so this
// answers 500 with the reason. Episodes are played over /ws.
func (s *Server) handleStep(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readBody(w, r, false)
	if !ok {
		return
	}
	raw, ok := body["action"]
	if !ok {
		writeError(w, invalid("body.action", "field required"))
		return
	}
	a, err := parseAction(raw, "body.action")
	if err != nil {
		writeError(w, err)
		return
	}
	if err := checkStepExtras(body); err != nil {
		writeError(w, err)
		return
	}
	ep, err := s.newEpisode()
	if err != nil {
		writeDetail(w, http.StatusInternalServerError, err.Error())
		return
	}
	defer ep.close()
	res, err := ep.step(a)
	if err != nil {
		writeDetail(w, http.StatusInternalServerError, err.Error()+" (HTTP /step runs on a fresh environment, as OpenEnv's does; play episodes over the /ws session)")
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// checkStepExtras validates StepRequest's optional timeout_s and request_id.
func checkStepExtras(body map[string]json.RawMessage) error {
	if v, ok := body["timeout_s"]; ok && string(v) != "null" {
		var t float64
		if err := json.Unmarshal(v, &t); err != nil || t <= 0 {
			return invalid("body.timeout_s", "must be a number greater than 0")
		}
	}
	if v, ok := body["request_id"]; ok && string(v) != "null" {
		var id string
		if err := json.Unmarshal(v, &id); err != nil || len([]rune(id)) > maxIDLength {
			return invalid("body.request_id", "must be a string of at most %d characters", maxIDLength)
		}
	}
	return nil
}

func (s *Server) handleState(w http.ResponseWriter, _ *http.Request) {
	ep, err := s.newEpisode()
	if err != nil {
		writeDetail(w, http.StatusInternalServerError, err.Error())
		return
	}
	defer ep.close()
	writeJSON(w, http.StatusOK, ep.state())
}

func (s *Server) handleSchema(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"action":      schemaOf[Action]("Action", "The text the agent wrote, as an action.", false),
		"observation": schemaOf[observationModel]("Observation", "What the environment shows after a reset or a step.", false),
		"state":       schemaOf[State]("State", "The current episode.", true),
	})
}

func (s *Server) handleMetadata(w http.ResponseWriter, _ *http.Request) {
	m := map[string]any{"name": s.name, "description": envs.Description(s.name),
		"documentation_url": "https://github.com/agentrl/agentrl/blob/main/docs/environments.md"}
	if s.opts.Version != "" {
		m["version"] = s.opts.Version
	}
	writeJSON(w, http.StatusOK, m)
}

func (s *Server) handleSplits(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.opts.Splits)
}

// splitRequest reads {split, index?, start?, stop?}.
func (s *Server) splitRequest(w http.ResponseWriter, r *http.Request) (split string, ints map[string]*int, ok bool) {
	body, ok := s.readBody(w, r, false)
	if !ok {
		return "", nil, false
	}
	raw, has := body["split"]
	if !has || json.Unmarshal(raw, &split) != nil {
		writeError(w, invalid("body.split", "a split name is required"))
		return "", nil, false
	}
	if _, err := s.splits.find(split); err != nil {
		writeDetail(w, http.StatusBadRequest, err.Error())
		return "", nil, false
	}
	ints = map[string]*int{}
	for _, k := range []string{"index", "start", "stop"} {
		v, has := body[k]
		if !has || string(v) == "null" {
			continue
		}
		var n int
		if err := json.Unmarshal(v, &n); err != nil {
			writeError(w, invalid("body."+k, "must be an integer"))
			return "", nil, false
		}
		ints[k] = &n
	}
	return split, ints, true
}

func (s *Server) handleTasks(w http.ResponseWriter, r *http.Request) {
	split, _, ok := s.splitRequest(w, r)
	if !ok {
		return
	}
	tasks, _ := s.splits.tasks(split, 0, maxListedTasks)
	writeJSON(w, http.StatusOK, map[string]any{"tasks": tasks, "env_name": s.name})
}

func (s *Server) handleNumTasks(w http.ResponseWriter, r *http.Request) {
	split, _, ok := s.splitRequest(w, r)
	if !ok {
		return
	}
	sp, _ := s.splits.find(split)
	writeJSON(w, http.StatusOK, map[string]any{"split": split, "num_tasks": sp.Count})
}

func (s *Server) handleGetTask(w http.ResponseWriter, r *http.Request) {
	split, ints, ok := s.splitRequest(w, r)
	if !ok {
		return
	}
	if ints["index"] == nil {
		writeError(w, invalid("body.index", "field required"))
		return
	}
	if _, err := s.splits.seed(split, *ints["index"]); err != nil {
		writeDetail(w, http.StatusBadRequest, err.Error())
		return
	}
	sp, _ := s.splits.find(split)
	writeJSON(w, http.StatusOK, sp.task(*ints["index"]))
}

func (s *Server) handleTaskRange(w http.ResponseWriter, r *http.Request) {
	split, ints, ok := s.splitRequest(w, r)
	if !ok {
		return
	}
	sp, _ := s.splits.find(split)
	start, stop := 0, sp.Count
	if v := ints["start"]; v != nil {
		start = *v
	}
	if v := ints["stop"]; v != nil {
		stop = *v
	}
	if stop-start > maxListedTasks {
		writeDetail(w, http.StatusBadRequest, fmt.Sprintf("at most %d tasks per range", maxListedTasks))
		return
	}
	tasks, _ := s.splits.tasks(split, start, stop)
	writeJSON(w, http.StatusOK, map[string]any{"tasks": tasks, "env_name": s.name})
}

// randomSeed draws a seed for a reset that names none.
func (s *Server) randomSeed() uint64 {
	return httpapi.RandomSeed() >> 1 // below 2^63: fits every client's int
}

// reap closes the sessions idle for longer than IdleTimeout.
func (s *Server) reap() {
	defer s.reaped.Done()
	tick := time.NewTicker(max(10*time.Millisecond, min(s.opts.IdleTimeout/4, 30*time.Second)))
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-tick.C:
			s.mu.Lock()
			for ss := range s.sessions {
				if now.Sub(ss.lastActive) > s.opts.IdleTimeout {
					s.log.Info("closing an idle session", "env", s.name, "idle", now.Sub(ss.lastActive).Round(time.Millisecond))
					ss.end("session idle for longer than " + s.opts.IdleTimeout.String())
				}
			}
			s.mu.Unlock()
		}
	}
}

var errCapacity = errors.New("capacity reached")

// open registers a new session, or refuses one over capacity.
func (s *Server) open(ss *session) (active int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return len(s.sessions), errors.New("server is closing")
	}
	if len(s.sessions) >= s.opts.MaxSessions {
		return len(s.sessions), errCapacity
	}
	ss.lastActive = time.Now()
	s.sessions[ss] = struct{}{}
	return len(s.sessions), nil
}

func (s *Server) touch(ss *session) {
	s.mu.Lock()
	ss.lastActive = time.Now()
	s.mu.Unlock()
}

func (s *Server) drop(ss *session) {
	s.mu.Lock()
	delete(s.sessions, ss)
	s.mu.Unlock()
}

// wsMessage is one server message.
type wsMessage struct {
	Type string `json:"type"`
	Data any    `json:"data"`
}

func errorMessage(code, message string, extra map[string]any) wsMessage {
	data := map[string]any{"message": message, "code": code}
	for k, v := range extra {
		data[k] = v
	}
	return wsMessage{Type: "error", Data: data}
}

// handleWS runs one session: the reference's websocket_endpoint.
func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept has answered
	}
	// The hijacked connection is this handler's to close on every path: a
	// client that drops TCP without a close frame ends the read loop with
	// an error, and without this its file stayed open (one per such
	// client, until accept failed with "too many open files"). After a
	// Close the call does nothing.
	defer conn.CloseNow()
	conn.SetReadLimit(s.opts.MaxMessageBytes)
	ctx := r.Context()
	send := func(m wsMessage) error {
		data, err := json.Marshal(m)
		if err != nil {
			data, _ = json.Marshal(errorMessage(CodeExecution, "encoding the reply: "+err.Error(), nil))
		}
		wctx, wcancel := context.WithTimeout(ctx, time.Minute)
		defer wcancel()
		return conn.Write(wctx, websocket.MessageText, data)
	}
	ss := &session{conn: conn}
	if active, err := s.open(ss); err != nil {
		if errors.Is(err, errCapacity) {
			send(errorMessage(CodeCapacityReached, fmt.Sprintf("server at capacity (%d/%d sessions)", active, s.opts.MaxSessions),
				map[string]any{"active_sessions": active, "max_sessions": s.opts.MaxSessions}))
		} else {
			send(errorMessage(CodeSession, err.Error(), nil))
		}
		conn.Close(websocket.StatusNormalClosure, "")
		return
	}
	defer s.drop(ss)
	ep, err := s.newEpisode()
	if err != nil {
		send(errorMessage(CodeFactory, err.Error(), map[string]any{"factory_name": s.name}))
		conn.Close(websocket.StatusNormalClosure, "")
		return
	}
	ss.ep = ep
	defer ep.close()
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			// The client went away, the message was too big (the library
			// closed with 1009), or the session was ended (idle, shutdown).
			return
		}
		s.touch(ss)
		if typ != websocket.MessageText {
			send(errorMessage(CodeSession, "binary messages are not part of the protocol", nil))
			conn.Close(websocket.StatusUnsupportedData, "text messages only")
			return
		}
		reply, closing := s.handleMessage(ep, data)
		if closing {
			conn.Close(websocket.StatusNormalClosure, "")
			return
		}
		if err := send(reply); err != nil {
			return
		}
	}
}

// handleMessage answers one client message; closing reports a close
// message.
func (s *Server) handleMessage(ep *episode, data []byte) (reply wsMessage, closing bool) {
	m, err := decodeObject(data, "message")
	if err != nil {
		if isValidation(err) {
			return validationReply(err), false
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return validationReply(invalid("message", "must be an object, not %s", te.Value)), false
		}
		return errorMessage(CodeInvalidJSON, "Invalid JSON: "+err.Error(), nil), false
	}
	var typ string
	if raw, ok := m["type"]; ok {
		if json.Unmarshal(raw, &typ) != nil {
			return validationReply(invalid("type", "must be a string")), false
		}
	}
	allowed := map[string]bool{"type": true}
	switch typ {
	case "reset", "step":
		allowed["data"] = true
	case "state", "close":
	default:
		return errorMessage(CodeUnknownType, "Unknown message type: "+typ, nil), false
	}
	for k := range m {
		if !allowed[k] {
			return validationReply(invalid(k, "extra inputs are not permitted")), false
		}
	}
	switch typ {
	case "close":
		return wsMessage{}, true
	case "state":
		return wsMessage{Type: "state", Data: ep.state()}, false
	case "reset":
		params := map[string]json.RawMessage{}
		if raw, ok := m["data"]; ok {
			if params, err = decodeObject(raw, "data"); err != nil {
				return validationReply(invalid("data", "must be an object")), false
			}
		}
		p, err := parseReset(params, "data")
		if err != nil {
			return validationReply(err), false
		}
		return s.observation(ep.reset(p))
	default: // step
		raw, ok := m["data"]
		if !ok {
			return validationReply(invalid("data", "field required")), false
		}
		a, err := parseAction(raw, "data")
		if err != nil {
			return validationReply(err), false
		}
		return s.observation(ep.step(a))
	}
}

func (s *Server) observation(res Result, err error) (wsMessage, bool) {
	switch {
	case isValidation(err):
		return validationReply(err), false
	case err != nil:
		return errorMessage(CodeExecution, err.Error(), nil), false
	}
	return wsMessage{Type: "observation", Data: res}, false
}

func validationReply(err error) wsMessage {
	var v *validationError
	errors.As(err, &v)
	return errorMessage(CodeValidation, "Invalid message: "+v.Error(), map[string]any{"errors": v.detail()})
}
