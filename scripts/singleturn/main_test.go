package main

import (
	"testing"

	"github.com/agentrl/agentrl/internal/study/studytest"
)

// TestSmoke runs every arm of the study for one tiny step.
func TestSmoke(t *testing.T) { studytest.Smoke(t, Default(), nil) }
