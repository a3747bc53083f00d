package rollout_test

import (
	"context"
	"net"
	"net/http"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrl/agentrl/envs"
	_ "github.com/agentrl/agentrl/envs/builtin"
	"github.com/agentrl/agentrl/envs/openenv"
	"github.com/agentrl/agentrl/policy/policytest"
	"github.com/agentrl/agentrl/rollout"
)

// TestRemoteEnvironmentRestart: the OpenEnv server playing the episodes
// dies in the middle of them and a fresh one (which knows none of their
// sessions) comes up on the same address a moment later. The failed
// steps are retried on fresh sessions, replayed to the episodes' states,
// and every episode plays on exactly as without the restart.
func TestRemoteEnvironmentRestart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	newServer := func() *openenv.Server {
		s, err := openenv.NewServer("sokoban", nil, openenv.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	first := &http.Server{Handler: newServer()}
	tracked := &trackingListener{Listener: ln}
	go first.Serve(tracked)
	restarted := make(chan struct{})
	// restart kills the server, and starts a fresh one on its address a
	// moment later.
	restart := func() {
		first.Close()
		tracked.closeAll() // the WebSocket sessions, which Close leaves open
		go func() {
			time.Sleep(300 * time.Millisecond)
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			close(restarted)
			(&http.Server{Handler: newServer()}).Serve(ln)
		}()
	}

	cfg := rollout.DefaultConfig()
	cfg.EnvRetries, cfg.EnvRetryDelay = 8, 100*time.Millisecond
	var replies atomic.Int32
	restartAt := int32(-1) // no restart in the reference run
	play := func() []rollout.Trajectory {
		t.Helper()
		f, err := envs.NewFactoryYAML("openenv", []byte("url: http://"+addr+"\ntimeout: 5s\n"))
		if err != nil {
			t.Fatal(err)
		}
		p := &policytest.Scripted{Reply: func(string, uint64) string {
			if replies.Add(1) == restartAt {
				restart() // before the second turn's steps
			}
			return "x</think><answer>Up || Left</answer>"
		}}
		e, err := rollout.New(context.Background(), cfg, p, f)
		if err != nil {
			t.Fatal(err)
		}
		trajs, err := e.Run(context.Background(), []uint64{3, 4}, 2, 9)
		if err != nil {
			t.Fatal(err)
		}
		return trajs
	}
	want := play()
	replies.Store(0)
	restartAt = 5 // the first reply of the second turn (4 episodes a turn)
	got := play()
	select {
	case <-restarted:
	default:
		t.Fatal("the server was not restarted during the episodes")
	}
	retries := 0
	for i := range got {
		retries += got[i].EnvRetries
		g := got[i]
		g.EnvRetries = 0
		if g.Err != "" || !reflect.DeepEqual(g, want[i]) {
			t.Errorf("episode %d differs from the run without a restart (err %q):\n%+v\n%+v", i, g.Err, g, want[i])
		}
	}
	if retries == 0 {
		t.Error("no environment call was retried: the restart did not reach the episodes")
	}
	t.Logf("%d environment calls retried across the restart", retries)
}

// trackingListener remembers the connections it accepted, so that a test
// can drop them all as a dying server would.
type trackingListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

func (l *trackingListener) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
}
