package train_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	_ "github.com/agentrl/agentrl/envs/sokoban"
	"github.com/agentrl/agentrl/train"
	"github.com/agentrl/agentrl/train/inprocess"
)

// countingLearner is a learner of a program's own: it trains with the
// in-process learner and counts the updates and optimizer steps the loop
// asks of it. Any type that implements train.Learner will do.
type countingLearner struct {
	train.Learner
	updates, steps int
}

func (l *countingLearner) Update(ctx context.Context, seqs *train.Sequences, opts train.UpdateOptions) (train.UpdateStats, error) {
	st, err := l.Learner.Update(ctx, seqs, opts)
	l.updates++
	l.steps += st.MiniBatches - st.Skipped
	return st, err
}

// Example_learner trains with a learner from outside package train, given
// to the run through Options.Learner. The factory is called once, with the
// run's configuration and, for a resumed run, the checkpoint to restore.
func Example_learner() {
	dir, err := os.MkdirTemp("", "agentrl-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	cfg, err := train.Parse([]byte(`
env: {name: sokoban}
run: {steps: 3, groups: 2, group_size: 4}
rollout: {max_turns: 2, sampling: {max_tokens: 16}}
model: {d_model: 16, layers: 1, heads: 2, kv_heads: 2, d_ff: 32, max_seq: 256, vocab_size: 300}
warm_start: {enabled: false}
validation: {every: 0, levels: 8}
collapse: {every: 0}
filter: {value: 1, include_zero: true}
algo: {ppo_mini_batch_size: 4, ppo_epochs: 2}
`), []string{"run.out=" + filepath.Join(dir, "run"), "warm_start.cache_dir=" + filepath.Join(dir, "cache")})
	if err != nil {
		panic(err)
	}
	var learner *countingLearner
	t, err := train.New(cfg, train.Options{
		Logger:  slog.New(slog.DiscardHandler),
		Console: io.Discard,
		Learner: func(ctx context.Context, start *train.Start) (train.Learner, error) {
			inner, err := inprocess.New(ctx, start) // the learner trainer uses
			if err != nil {
				return nil, err
			}
			learner = &countingLearner{Learner: inner}
			return learner, nil
		},
	})
	if err != nil {
		panic(err)
	}
	if err := t.Run(context.Background()); err != nil {
		panic(err)
	}
	fmt.Printf("%d updates, %d optimizer steps\n", learner.updates, learner.steps)
	// Output: 3 updates, 24 optimizer steps
}
