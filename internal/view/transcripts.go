package view

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// TranscriptFile is one step's sample transcripts: label is "train" or
// "val".
type TranscriptFile struct {
	Label string `json:"label"`
	Step  int    `json:"step"`
}

// TranscriptsReply is the reply of /api/transcripts: a run's transcript
// files and collapse readings, and where its tokens are decoded from.
type TranscriptsReply struct {
	Run      string           `json:"run"`
	Files    []TranscriptFile `json:"files"`
	Collapse []int            `json:"collapse"`
	// Tokenizer is the file the reply tokens are decoded with; when
	// there is none, TokenizerError says why and the episodes carry the
	// replies' text without per-token text.
	Tokenizer      string `json:"tokenizer,omitempty"`
	TokenizerError string `json:"tokenizer_error,omitempty"`
}

var (
	transcriptRE = regexp.MustCompile(`^([a-z]+)-step(\d+)\.txt$`)
	collapseRE   = regexp.MustCompile(`^collapse-step(\d+)\.json$`)
	headerRE     = regexp.MustCompile(`^=== group (\d+) sample (\d+) seed (\d+): score (\S+) success (true|false) actions (\d+) policy (.*?) version (\d+)(?: error: (.*))?$`)
	roleRE       = regexp.MustCompile(`^--- (system|user|assistant|tool)$`)
	rewardRE     = regexp.MustCompile(`^Reward:\s+(\S+)`)
	// invalidRE finds the warning a prompt opens with after a reply
	// that took no valid action (package rollout's, in either prompt
	// style).
	invalidRE = regexp.MustCompile(`(?m)^No valid action`)
)

// listTranscripts lists a run's transcript files and collapse readings,
// by step.
func (r *run) listTranscripts() (files []TranscriptFile, collapse []int, err error) {
	entries, err := os.ReadDir(filepath.Join(r.dir, transcripts))
	if errors.Is(err, fs.ErrNotExist) {
		return []TranscriptFile{}, []int{}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	files, collapse = []TranscriptFile{}, []int{}
	for _, e := range entries {
		if m := transcriptRE.FindStringSubmatch(e.Name()); m != nil {
			step, _ := strconv.Atoi(m[2])
			files = append(files, TranscriptFile{Label: m[1], Step: step})
		} else if m := collapseRE.FindStringSubmatch(e.Name()); m != nil {
			step, _ := strconv.Atoi(m[1])
			collapse = append(collapse, step)
		}
	}
	slices.SortFunc(files, func(a, b TranscriptFile) int {
		if a.Step != b.Step {
			return a.Step - b.Step
		}
		return strings.Compare(a.Label, b.Label)
	})
	slices.Sort(collapse)
	return files, collapse, nil
}

func (s *Server) handleTranscripts(w http.ResponseWriter, r *http.Request) {
	run, err := s.run(r.URL.Query().Get("run"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	out := TranscriptsReply{Run: run.dir}
	if out.Files, out.Collapse, err = run.listTranscripts(); err != nil {
		s.fail(w, r, err)
		return
	}
	if len(out.Files) > 0 {
		_, path, err := run.decoder()
		out.Tokenizer = path
		if err != nil {
			out.TokenizerError = err.Error()
		}
	}
	s.reply(w, r, out)
}

// Message is one message of a transcript.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Turn is one reply of an episode, with the per-token values recorded
// for it.
type Turn struct {
	// Message is the index of the reply's assistant message; the
	// messages after the previous reply's are its prompt.
	Message int `json:"message"`
	// Reward is the turn's reward: what the next user message reports,
	// or for the last turn the episode's score less the rewards before
	// (RewardFromScore); absent when unknown.
	Reward          *float64 `json:"reward,omitempty"`
	RewardFromScore bool     `json:"reward_from_score,omitempty"`
	// Invalid says the environment took no valid action from the reply,
	// as the next prompt reports (unknown for the last turn).
	Invalid bool `json:"invalid,omitempty"`
	// PromptTokens counts the ids the turn's prompt added (its whole
	// window, under a history window).
	PromptTokens int `json:"prompt_tokens"`
	// IDs are the reply's token ids and Tokens their text (empty without
	// a tokenizer).
	IDs    []int    `json:"ids"`
	Tokens []string `json:"tokens,omitempty"`
	// LogProb is the sampler's log-prob of each reply token; Advantage
	// and OldLogProb what it was trained with (kept groups only). Null
	// entries were not finite.
	LogProb    []*float64 `json:"logprob"`
	Advantage  []*float64 `json:"advantage,omitempty"`
	OldLogProb []*float64 `json:"old_logprob,omitempty"`
}

// Episode is one transcript: its header, messages, and turns.
type Episode struct {
	Index   int     `json:"index"`
	Group   int     `json:"group"`
	Sample  int     `json:"sample"`
	Seed    uint64  `json:"seed"`
	Score   float64 `json:"score"`
	Success bool    `json:"success"`
	Actions int     `json:"actions"`
	Policy  string  `json:"policy"`
	Version int     `json:"policy_version"`
	Error   string  `json:"error,omitempty"`
	// Kept says the filter kept the episode's group (absent without the
	// token file).
	Kept  *bool `json:"kept,omitempty"`
	Drift *int  `json:"rerender_drift,omitempty"`
	// InvalidTurns counts the turns whose reply took no valid action.
	InvalidTurns int `json:"invalid_turns"`

	Messages []Message `json:"messages"`
	Turns    []Turn    `json:"turns"`
}

// EpisodesReply is the reply of /api/episodes: one transcript file.
type EpisodesReply struct {
	Run      string    `json:"run"`
	Label    string    `json:"label"`
	Step     int       `json:"step"`
	Episodes []Episode `json:"episodes"`
	// Decoded says the replies' tokens carry their text.
	Decoded bool `json:"decoded"`
}

// parseTranscript reads a transcript's text: an episode per "=== group"
// header, a message per "--- role" line.
func parseTranscript(data []byte) []Episode {
	var eps []Episode
	var msg *Message
	var lines []string
	flush := func() {
		if msg != nil {
			msg.Content = strings.Join(lines, "\n")
			ep := &eps[len(eps)-1]
			ep.Messages = append(ep.Messages, *msg)
		}
		msg, lines = nil, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := headerRE.FindStringSubmatch(line); m != nil {
			if msg != nil && len(lines) > 0 && lines[len(lines)-1] == "" {
				lines = lines[:len(lines)-1] // the blank line that ends an episode
			}
			flush()
			ep := Episode{Index: len(eps), Policy: m[7], Error: m[9], Success: m[5] == "true"}
			ep.Group, _ = strconv.Atoi(m[1])
			ep.Sample, _ = strconv.Atoi(m[2])
			ep.Seed, _ = strconv.ParseUint(m[3], 10, 64)
			ep.Score, _ = strconv.ParseFloat(m[4], 64)
			ep.Actions, _ = strconv.Atoi(m[6])
			ep.Version, _ = strconv.Atoi(m[8])
			eps = append(eps, ep)
			continue
		}
		if len(eps) == 0 {
			continue
		}
		if m := roleRE.FindStringSubmatch(line); m != nil {
			flush()
			msg = &Message{Role: m[1]}
			continue
		}
		lines = append(lines, line)
	}
	if msg != nil && len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	flush()
	for i := range eps {
		eps[i].Turns = messageTurns(&eps[i])
	}
	return eps
}

// messageTurns makes a turn of every assistant message, with the reward
// the next user message reports.
func messageTurns(ep *Episode) []Turn {
	turns := []Turn{}
	sum, known := 0.0, true
	for i, m := range ep.Messages {
		if m.Role != "assistant" {
			continue
		}
		t := Turn{Message: i}
		if i+1 < len(ep.Messages) && ep.Messages[i+1].Role == "user" {
			if invalidRE.MatchString(ep.Messages[i+1].Content) {
				t.Invalid = true
				ep.InvalidTurns++
			}
			if m := rewardRE.FindStringSubmatch(ep.Messages[i+1].Content); m != nil {
				if v, err := strconv.ParseFloat(m[1], 64); err == nil {
					t.Reward = &v
					sum += v
				}
			}
		}
		if t.Reward == nil && !(i+1 < len(ep.Messages)) && known {
			v := ep.Score - sum
			t.Reward, t.RewardFromScore = &v, true
		}
		if t.Reward == nil {
			known = false
		}
		turns = append(turns, t)
	}
	return turns
}

// tokenRecord is one line of a transcript's .tokens.jsonl (written by
// package train).
type tokenRecord struct {
	Kept  bool `json:"kept"`
	Drift *int `json:"rerender_drift"`
	Turns []struct {
		Window     []int      `json:"window"`
		Prompt     []int      `json:"prompt"`
		Reply      []int      `json:"reply"`
		LogProbs   []*float64 `json:"logprobs"`
		Advantage  []*float64 `json:"advantage"`
		OldLogProb []*float64 `json:"old_logprob"`
	} `json:"turns"`
}

// addTokens adds the token file's ids and values to the episodes, in
// order, decoding the reply tokens when bytesOf is not nil.
func addTokens(eps []Episode, data []byte, bytesOf tokenBytes) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	for i := 0; i < len(eps) && dec.More(); i++ {
		var rec tokenRecord
		if err := dec.Decode(&rec); err != nil {
			return fmt.Errorf("episode %d: %w", i, err)
		}
		ep := &eps[i]
		ep.Kept, ep.Drift = &rec.Kept, rec.Drift
		for k, tt := range rec.Turns {
			if k >= len(ep.Turns) {
				ep.Turns = append(ep.Turns, Turn{Message: -1})
			}
			t := &ep.Turns[k]
			t.IDs, t.LogProb, t.Advantage, t.OldLogProb = tt.Reply, tt.LogProbs, tt.Advantage, tt.OldLogProb
			t.PromptTokens = len(tt.Prompt)
			if tt.Window != nil {
				t.PromptTokens = len(tt.Window)
			}
			if bytesOf != nil {
				t.Tokens = pieces(tt.Reply, bytesOf)
			}
		}
	}
	return nil
}

// episodes reads one transcript file with its token ids.
func (r *run) episodes(label string, step int) (EpisodesReply, error) {
	out := EpisodesReply{Run: r.dir, Label: label, Step: step}
	base := filepath.Join(r.dir, transcripts, fmt.Sprintf("%s-step%05d", label, step))
	text, err := os.ReadFile(base + ".txt")
	if errors.Is(err, fs.ErrNotExist) {
		return out, fmt.Errorf("%w: no %s transcript at step %d", errNotFound, label, step)
	}
	if err != nil {
		return out, err
	}
	out.Episodes = parseTranscript(text)
	if out.Episodes == nil {
		out.Episodes = []Episode{}
	}
	toks, err := os.ReadFile(base + ".tokens.jsonl")
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	bytesOf, _, _ := r.decoder()
	out.Decoded = bytesOf != nil
	return out, addTokens(out.Episodes, toks, bytesOf)
}

// labelRE is what a transcript label may be.
var labelRE = regexp.MustCompile(`^[a-z]+$`)

func (s *Server) handleEpisodes(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	run, err := s.run(q.Get("run"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	step, err := strconv.Atoi(q.Get("step"))
	label := q.Get("label")
	if err != nil || step < 0 || !labelRE.MatchString(label) {
		s.fail(w, r, fmt.Errorf("%w: give ?label=train|val&step=N", errBadRequest))
		return
	}
	run.mu.Lock()
	out, err := run.episodes(label, step)
	run.mu.Unlock()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.reply(w, r, out)
}
