package tinker

import (
	"net/http"
	"testing"
	"time"
)

// TestRetryAfter: the SDK's _base_client.py _parse_retry_after_header
// reads retry-after-ms, then retry-after as (possibly fractional) seconds,
// then as an HTTP date, and honours at most 60 s.
func TestRetryAfter(t *testing.T) {
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	future := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	past := time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		h        http.Header
		min, max time.Duration
	}{
		{h(), 0, 0},
		{h("Retry-After", "2"), 2 * time.Second, 2 * time.Second},
		{h("Retry-After", "0.5"), 500 * time.Millisecond, 500 * time.Millisecond},
		{h("Retry-After", "3600"), time.Minute, time.Minute},
		{h("Retry-After", "-1"), 0, 0},
		{h("Retry-After", "soon"), 0, 0},
		{h("Retry-After", future), 28 * time.Second, 30 * time.Second},
		{h("Retry-After", past), 0, 0},
		{h("Retry-After-Ms", "250", "Retry-After", "9"), 250 * time.Millisecond, 250 * time.Millisecond},
		{h("Retry-After-Ms", "junk", "Retry-After", "1"), time.Second, time.Second},
	} {
		if got := retryAfter(tc.h); got < tc.min || got > tc.max {
			t.Errorf("%v: %v, want [%v, %v]", tc.h, got, tc.min, tc.max)
		}
	}
}

func TestBackoffDelays(t *testing.T) {
	o := Options{RetryBaseDelay: 100 * time.Millisecond, RetryMaxDelay: time.Second}
	o.setDefaults()
	c := &Client{opts: o}
	c.rng = newJitter()
	for retry, full := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		full *= time.Millisecond
		d := c.delay(retry)
		if d > full || d < full*3/4 {
			t.Errorf("retry %d: %v, want [%v, %v]", retry, d, full*3/4, full)
		}
	}
	// The jitter source is seeded: the same sequence every run.
	c1, c2 := &Client{opts: o, rng: newJitter()}, &Client{opts: o, rng: newJitter()}
	for i := range 5 {
		if c1.delay(i) != c2.delay(i) {
			t.Fatal("jitter is not deterministic")
		}
	}
}

func TestOptionDefaults(t *testing.T) {
	var o Options
	o.setDefaults()
	if o.RequestTimeout != time.Minute || o.FutureTimeout != 30*time.Minute || o.MaxRetries != 5 ||
		o.HeartbeatInterval != 10*time.Second || o.PollTimeout != 330*time.Second || o.Logger == nil {
		t.Fatalf("%+v", o)
	}
	o = Options{FutureTimeout: -1, MaxRetries: -1, HeartbeatInterval: -1}
	o.setDefaults()
	if o.FutureTimeout != 0 || o.MaxRetries != 0 || o.HeartbeatInterval >= 0 {
		t.Fatalf("%+v", o)
	}
}

func TestNormalizeBaseURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://h:8000":                  "http://h:8000",
		"http://h:8000/":                 "http://h:8000",
		"http://h:8000/api/v1":           "http://h:8000",
		"http://h:8000/api/v1/":          "http://h:8000",
		"https://h/services/tinker-prod": "https://h/services/tinker-prod",
	} {
		if got, err := normalizeBaseURL(in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"h:8000", "ftp://h", "http://h?x=1", ""} {
		if _, err := normalizeBaseURL(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestWireSeed(t *testing.T) {
	for _, s := range []uint64{0, 1, 100, 1<<31 - 1} {
		if got := wireSeed(s); got != int64(s) {
			t.Errorf("wireSeed(%d) = %d", s, got)
		}
	}
	seen := map[int64]uint64{}
	for _, s := range []uint64{1 << 31, 1<<31 + 1, 1 << 40, 1<<63 + 5, ^uint64(0)} {
		got := wireSeed(s)
		if got < 0 || got >= 1<<31 {
			t.Errorf("wireSeed(%d) = %d out of range", s, got)
		}
		if prev, ok := seen[got]; ok {
			t.Errorf("wireSeed(%d) = wireSeed(%d)", s, prev)
		}
		seen[got] = s
	}
}
