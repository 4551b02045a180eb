package main

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// api is the rate-limited API the demo calls: a stand-in for an LLM
// completion endpoint with a requests-per-second quota, a tokens-per-minute
// quota and a cap on concurrent requests. Beyond any of them it answers 429
// with Retry-After (whole seconds, rounded up).
//
// Its checks are strict, in the sense of how APIs document them, and
// independent of sluice (no code of sluice decides here):
//
//   - requests: at most rps requests in any 1 s, counted over the
//     half-open window (now-1s, now] of the arrival instants it accepted;
//   - tokens: a bucket of tpmBurst tokens refilled continuously at tpm per
//     minute (the "continuously replenished" quota some LLM APIs document),
//     kept exactly in integers (token·ns per minute);
//   - concurrency: at most maxConcurrent requests being served.
//
// Only accepted requests count against the quotas.
type api struct {
	rps           int
	tpm, tpmBurst int64
	maxConcurrent int
	latency       time.Duration // mean; each request takes 0.5 to 1.5 of it

	mu       sync.Mutex
	rng      *rand.Rand
	arrivals []time.Time // accepted, within the last second
	level    int64       // tokens·ns/min in the bucket at levelAt
	levelAt  time.Time
	started  bool
	inFlight int

	// what it saw
	accepted, rejected int
	tokens             int64
	peakPerSecond      int   // most requests accepted in one window
	lowestLevel        int64 // fewest tokens left after an acceptance
	first, last        time.Time
}

const perMinute = int64(time.Minute) // the bucket's scale: tokens·ns/min

func newAPI(cfg config) *api {
	return &api{
		rps: cfg.rps, tpm: cfg.tpm, tpmBurst: cfg.tpmBurst, maxConcurrent: cfg.concurrency,
		latency: time.Duration(cfg.latency), rng: rand.New(rand.NewPCG(cfg.seed, 2)),
		lowestLevel: cfg.tpmBurst,
	}
}

type completion struct {
	Tokens int64 `json:"tokens"`
}

func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cost, err := strconv.ParseInt(r.Header.Get("X-Tokens"), 10, 64)
	if err != nil || cost < 1 {
		http.Error(w, "X-Tokens: a positive number of tokens", http.StatusBadRequest)
		return
	}
	retry, took := a.admit(time.Now(), cost)
	if !took {
		w.Header().Set("Retry-After", strconv.FormatInt(int64((retry+time.Second-1)/time.Second), 10))
		http.Error(w, "rate limited", http.StatusTooManyRequests)
		return
	}
	time.Sleep(a.serviceTime())
	a.mu.Lock()
	a.inFlight-- // before the answer: the client releases after reading it
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(completion{Tokens: cost})
}

func (a *api) serviceTime() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.latency/2 + time.Duration(a.rng.Int64N(int64(a.latency)+1))
}

// admit applies the three checks at now and, if all pass, counts the
// request. Otherwise it returns how long until the failing check could
// pass.
func (a *api) admit(now time.Time, cost int64) (retry time.Duration, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.started {
		a.started, a.levelAt, a.level, a.first = true, now, a.tpmBurst*perMinute, now
	}
	// Refill the bucket: tpm tokens per minute is tpm token·ns/min per ns.
	full := a.tpmBurst * perMinute
	if elapsed := int64(now.Sub(a.levelAt)); elapsed > 0 {
		if elapsed >= (full-a.level)/a.tpm+1 {
			a.level = full
		} else {
			a.level += elapsed * a.tpm
		}
		a.levelAt = now
	}
	// Forget arrivals that left the window (now-1s, now].
	k := 0
	for k < len(a.arrivals) && !a.arrivals[k].After(now.Add(-time.Second)) {
		k++
	}
	a.arrivals = a.arrivals[k:]

	switch {
	case a.inFlight >= a.maxConcurrent:
		a.rejected++
		return a.latency / 2, false
	case len(a.arrivals) >= a.rps:
		a.rejected++
		return a.arrivals[0].Add(time.Second).Sub(now), false
	case a.level < cost*perMinute:
		a.rejected++
		return time.Duration((cost*perMinute - a.level + a.tpm - 1) / a.tpm), false
	}
	a.arrivals = append(a.arrivals, now)
	a.level -= cost * perMinute
	a.inFlight++
	a.accepted++
	a.tokens += cost
	a.last = now
	a.peakPerSecond = max(a.peakPerSecond, len(a.arrivals))
	a.lowestLevel = min(a.lowestLevel, a.level/perMinute)
	return 0, true
}

// apiStats is what the API saw.
type apiStats struct {
	accepted, rejected int
	tokens             int64
	peakPerSecond      int
	lowestLevel        int64
	span               time.Duration // first to last accepted arrival
}

func (a *api) stats() apiStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return apiStats{a.accepted, a.rejected, a.tokens, a.peakPerSecond, a.lowestLevel, a.last.Sub(a.first)}
}
