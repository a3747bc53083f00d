package vllm

import (
	"net/http"
	"testing"
	"time"
)

func TestBalancerPicksLeastLoaded(t *testing.T) {
	a, b, c := &endpoint{base: "a"}, &endpoint{base: "b"}, &endpoint{base: "c"}
	bal := balancer{eps: []*endpoint{a, b, c}}
	// Ties go round-robin.
	var order string
	for range 6 {
		order += bal.pick().base
	}
	if order != "abcabc" {
		t.Fatalf("tie order %q", order)
	}
	a.inflight.Store(2)
	b.inflight.Store(1)
	c.inflight.Store(3)
	for range 3 {
		if ep := bal.pick(); ep != b {
			t.Fatalf("picked %s, want the least loaded b", ep.base)
		}
	}
	// A server that just failed is avoided while another is available.
	b.avoidUntil.Store(time.Now().Add(time.Hour).UnixNano())
	if ep := bal.pick(); ep != a {
		t.Fatalf("picked %s, want a (b is cooling down)", ep.base)
	}
	a.avoidUntil.Store(time.Now().Add(time.Hour).UnixNano())
	c.avoidUntil.Store(time.Now().Add(time.Hour).UnixNano())
	if ep := bal.pick(); ep != b {
		t.Fatalf("picked %s, want the least loaded b when all cool down", ep.base)
	}
}

func TestRetryAfter(t *testing.T) {
	for h, want := range map[string]time.Duration{
		"": 0, "3": 3 * time.Second, "-1": 0, "junk": 0, "86400": maxRetryAfter,
		time.Now().Add(-time.Minute).UTC().Format(http.TimeFormat): 0,
	} {
		if got := retryAfter(h); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", h, got, want)
		}
	}
	d := retryAfter(time.Now().Add(10 * time.Second).UTC().Format(http.TimeFormat))
	if d < 8*time.Second || d > 10*time.Second {
		t.Errorf("HTTP-date Retry-After gave %v", d)
	}
}

func TestBackoff(t *testing.T) {
	r := Retry{MaxAttempts: 10, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	for attempt, full := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 9: time.Second} {
		for range 50 {
			if d := r.delay(attempt); d < full/2 || d > full {
				t.Fatalf("delay(%d) = %v, want in [%v, %v]", attempt, d, full/2, full)
			}
		}
	}
}

func TestNormalizeBaseURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://h:8000":            "http://h:8000",
		"http://h:8000/":           "http://h:8000",
		"http://h:8000/v1":         "http://h:8000",
		" https://h/proxy/v1/ ":    "https://h/proxy",
		"http://127.0.0.1:1/vllm/": "http://127.0.0.1:1/vllm",
	} {
		if got, err := normalizeBaseURL(in); err != nil || got != want {
			t.Errorf("normalizeBaseURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
