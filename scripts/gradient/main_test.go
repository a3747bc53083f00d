package main

import (
	"testing"

	"github.com/agentrl/agentrl/internal/study/studytest"
)

// TestSmoke runs every arm for one tiny step, measuring at that step, and
// checks that the gradient table reaches the results.
func TestSmoke(t *testing.T) {
	studytest.Smoke(t, Default(), []string{"analysis.gradient_every=1", "analysis.gradient_buckets=2"}, "| PPO | q1 |", "| GRPO | q2 |")
}
