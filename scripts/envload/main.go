// Command envload measures `trainer serve-env` under load on loopback:
// environment steps per second for N concurrent WebSocket sessions against
// the same work done in-process, and the server's memory per open session.
//
//	go run ./scripts/envload                        # sokoban; 1, 64 and 1000 sessions
//	go run ./scripts/envload -env frozenlake -sessions 1,16 -steps 20000
//
// The server is a separate process (the trainer binary, built first), a
// fresh one for each N, so its resident memory is measured alone: VmRSS
// with N sessions open, each after a reset, minus VmRSS of the idle
// server, over N (for N = 1 that includes the first connection's one-time
// allocations). Each session (and each
// in-process worker) plays random valid actions, resetting with the next
// seed when an episode ends, for its share of -steps. Client and server
// share the machine's cores, as they do when a trainer on the same host
// uses the server.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentrl/agentrl/envs"
	_ "github.com/agentrl/agentrl/envs/builtin"
	"github.com/agentrl/agentrl/envs/openenv"
)

func main() {
	env := flag.String("env", "sokoban", "environment to serve")
	sessions := flag.String("sessions", "1,64,1000", "comma-separated session counts")
	steps := flag.Int("steps", 60000, "environment steps per measurement, split over the sessions")
	out := flag.String("out", "runs/envload", "directory for the trainer binary")
	flag.Parse()
	var counts []int
	for _, f := range strings.Split(*sessions, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			slog.Error("envload", "err", fmt.Sprintf("-sessions: %q is not a positive count", f))
			os.Exit(2)
		}
		counts = append(counts, n)
	}
	if err := run(*env, counts, *steps, *out); err != nil {
		slog.Error("envload", "err", err)
		os.Exit(1)
	}
}

func run(env string, counts []int, totalSteps int, out string) error {
	factory, err := envs.NewFactory(env, nil)
	if err != nil {
		return err
	}
	maxN := 0
	for _, n := range counts {
		maxN = max(maxN, n)
	}
	bin := filepath.Join(out, "trainer")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	build := exec.Command("go", "build", "-o", bin, "./trainer")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build ./trainer: %w", err)
	}
	fmt.Printf("go run ./scripts/envload -env %s -sessions %s -steps %d  (GOMAXPROCS %d)\n\n", env, joinInts(counts), totalSteps, runtime.GOMAXPROCS(0))
	fmt.Println("| sessions | steps/s in-process | steps/s over serve-env | ratio | server RSS per open session |")
	fmt.Println("|---|---|---|---|---|")
	for _, n := range counts {
		per := max(totalSteps/n, 20)
		local, err := measure(n, per, func() (stepper, error) {
			e, err := factory.New()
			return e, err
		})
		if err != nil {
			return err
		}
		remote, perSession, err := measureServer(bin, env, n, per)
		if err != nil {
			return err
		}
		fmt.Printf("| %d | %.0f | %.0f | %.3f | %.1f KiB |\n", n, local, remote, remote/local, perSession/1024)
	}
	return nil
}

// measureServer starts a fresh server, opens n sessions, and returns the
// steps per second over them and the server's resident memory per open
// session (VmRSS with the sessions open and reset, minus VmRSS before).
func measureServer(bin, env string, n, per int) (stepsPerS, rssPerSession float64, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve-env", "-env", env, "-addr", "127.0.0.1:0", "-max-sessions", strconv.Itoa(n+8))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		cancel()
		return 0, 0, err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return 0, 0, err
	}
	defer func() { cancel(); cmd.Wait() }() // stop the server, then reap it
	url, err := serverURL(stderr)
	if err != nil {
		return 0, 0, err
	}
	before, err := rss(cmd.Process.Pid)
	if err != nil {
		return 0, 0, err
	}
	var open int64
	stepsPerS, err = measure(n, per, func() (stepper, error) {
		cfg := openenv.DefaultClientConfig()
		cfg.URL = url
		return openenv.NewClient(cfg), nil
	}, func() { open, _ = rss(cmd.Process.Pid) })
	return stepsPerS, float64(open-before) / float64(n), err
}

// stepper is the part of envs.Env the load uses.
type stepper interface {
	Reset(seed uint64) (string, error)
	Step(action string) (envs.StepResult, error)
	Actions() []string
}

// measure runs n workers of per steps each and returns steps per second.
// opened, if given, runs once all workers have reset their first episode.
func measure(n, per int, newEnv func() (stepper, error), opened ...func()) (float64, error) {
	var ready, done sync.WaitGroup
	ready.Add(n)
	done.Add(n)
	start := make(chan struct{})
	errs := make(chan error, n)
	for w := range n {
		go func() {
			defer done.Done()
			e, err := newEnv()
			if err != nil {
				errs <- err
				ready.Done()
				return
			}
			if c, ok := e.(interface{ Close() error }); ok {
				defer c.Close()
			}
			seed := uint64(w) << 20
			if _, err := e.Reset(seed); err != nil {
				errs <- err
				ready.Done()
				return
			}
			ready.Done()
			<-start
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			vocab := e.Actions()
			for range per {
				res, err := e.Step(vocab[rng.IntN(len(vocab))])
				if err != nil {
					errs <- err
					return
				}
				if res.Done {
					seed++
					if _, err := e.Reset(seed); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	ready.Wait()
	for _, f := range opened {
		f()
	}
	t0 := time.Now()
	close(start)
	done.Wait()
	elapsed := time.Since(t0)
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return float64(n*per) / elapsed.Seconds(), nil
}

// serverURL reads the server's log until it says where it listens, then
// keeps draining it.
func serverURL(r interface{ Read([]byte) (int, error) }) (string, error) {
	sc := bufio.NewScanner(r)
	re := regexp.MustCompile(`msg=serving env=\S+ url=(\S+)`)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			go func() {
				for sc.Scan() {
				}
			}()
			return m[1], nil
		}
	}
	return "", errors.New("serve-env exited before listening")
}

// rss is a process's resident set size in bytes (Linux /proc).
func rss(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
