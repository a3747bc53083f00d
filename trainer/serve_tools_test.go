package main

import (
	"strings"
	"testing"
)

// TestServeToolCallParserFlag: an unknown -tool-call-parser is a usage
// error naming the formats, before anything loads.
func TestServeToolCallParserFlag(t *testing.T) {
	code, _, errOut := runCLI(t, "", "serve", "-checkpoint", "x", "-tool-call-parser", "mistral")
	if code != 2 || !strings.Contains(errOut, "-tool-call-parser") || !strings.Contains(errOut, "hermes, llama3_json, compact") {
		t.Errorf("-tool-call-parser mistral: exit %d:\n%s", code, errOut)
	}
	code, _, errOut = runCLI(t, "", "serve", "-checkpoint", "x", "-tool-call-parser", "hermes")
	if code != 1 || !strings.Contains(errOut, "does not exist") {
		t.Errorf("-tool-call-parser hermes: exit %d, want 1 at the missing checkpoint:\n%s", code, errOut)
	}
}
