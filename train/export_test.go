package train

import "time"

// What the external tests (package train_test) reach inside the package:
// the run directory's layout, its identity record and the test hooks.

const (
	CheckpointsDir   = checkpointsDir
	LatestCheckpoint = latestCheckpoint
	MetricsFile      = metricsFile
	EventsDir        = eventsDir
	TranscriptsDir   = transcriptsDir
	IdentityFile     = identityFile
	StateFile        = stateFile
	SummaryFile      = summaryFile
	ConfigFile       = configFile
)

type RunIdentity = runIdentity

var (
	ReadIdentity   = readIdentity
	TranscriptName = transcriptName

	HookRecorded     = &testHookRecorded
	HookUpdate       = &testHookUpdate
	HookTrajectories = &testHookTrajectories
	HookMiniBatch    = &testHookMiniBatch
)

// Identity is the run identity of t's configuration (without the model).
func Identity(t *Trainer) (RunIdentity, error) { return t.identity() }

// LoadState reads the trainer state of the checkpoint in dir.
func LoadState(t *Trainer, dir string) (State, error) { return t.loadState(dir) }

// SetClock replaces t's clock, which only logs and timings read.
func SetClock(t *Trainer, now func() time.Time) { t.now = now }
