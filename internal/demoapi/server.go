package demoapi

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// API is the rate-limited API the demos call: a stand-in for an LLM
// completion endpoint, with a requests quota, a tokens quota and a cap on
// concurrent requests, and a few seconds of overload in the middle of the
// run. It is written independently of sluice: no code of sluice decides
// here, and it reads time itself, at each request's arrival, never the
// client's stamps.
//
//   - requests: at most RPS accepted arrivals in any half-open window
//     (now-1s, now];
//   - tokens: at most TokenLimit tokens in any half-open window
//     (now-TokenWindow, now], charged as some LLM APIs document it: the
//     request's prompt and max_tokens on arrival, adjusted to what the
//     completion really used when it answers (X-Usage-Tokens, and usage in
//     the JSON body). The completion is shorter than max_tokens: the
//     estimate a client acquires is larger than the cost it settles;
//   - concurrency: at most MaxConcurrent requests being served;
//   - overload: from OverloadAt to OverloadAt+OverloadFor after the first
//     request, every request is answered 429 with Retry-After, as an API
//     short of capacity does, and nothing is charged.
//
// A refusal by a quota is a 429 with the exact Retry-After (whole seconds,
// rounded up); every answer carries the quotas' RateLimit-Policy and
// RateLimit fields and the x-ratelimit-* headers. Requests name their job
// in X-Job-Id, so that the API can tell whether a job refused for the
// overload came back after its Retry-After.
//
// An API is an http.Handler, safe for concurrent use.
type API struct {
	cfg Config

	mu       sync.Mutex
	rng      *rand.Rand
	started  bool
	first    time.Time   // the first arrival: the clock of the overload
	arrivals []time.Time // accepted, within the last second
	window   []*Charge   // accepted, within the last token window
	inFlight int
	// retryAfter is, per job refused for the overload, the earliest
	// instant its retry was allowed to arrive.
	retryAfter map[string]time.Time

	stats Stats
}

// Config is an API's quotas, latency, overload and seed.
type Config struct {
	RPS           int           // requests in any 1 s
	TokenLimit    int64         // tokens in any TokenWindow
	TokenWindow   time.Duration // the window of the token quota
	MaxConcurrent int           // requests served at once
	Latency       time.Duration // mean; each request takes 0.5 to 1.5 of it
	OverloadAt    time.Duration // after the first arrival
	OverloadFor   time.Duration // 0: no overload
	OverloadRetry time.Duration // the Retry-After of an overloaded answer
	Seed          uint64        // for the latencies and the completions' lengths
}

// Charge is one accepted request in the token window.
type Charge struct {
	At         time.Time // its arrival
	Tokens     int64     // the estimate until it answers, then the real usage
	Estimate   int64     // prompt + max_tokens
	AnsweredAt time.Time // zero until it answers
}

// Stats is what the API saw.
type Stats struct {
	Accepted        int
	QuotaRefused    int // 429s because the client exceeded a quota
	OverloadRefused int // 429s of the overload
	RetriedInTime   int // overload 429s whose retry came after its Retry-After
	RetriedEarly    int // ... before it
	NeverRetried    int // overload 429s not followed by a retry of the job
	TokensUsed      int64
	TokensEstimated int64
	PeakRequests    int   // most requests accepted in one 1 s window
	PeakTokens      int64 // most tokens charged in one token window, at an arrival
	First, Last     time.Time
	OverloadFrom    time.Time
	OverloadTo      time.Time
	Charges         []Charge // every answered request, as charged in the end
}

// New returns an API with the quotas of c, which the caller validates
// (positive quotas and latency).
func New(c Config) *API {
	return &API{cfg: c, rng: rand.New(rand.NewPCG(c.Seed, 2)), retryAfter: map[string]time.Time{}}
}

// CompletionRequest is the body of a request: what an LLM API is asked.
type CompletionRequest struct {
	PromptTokens int64 `json:"prompt_tokens"`
	MaxTokens    int64 `json:"max_tokens"`
}

// CompletionResponse is the body of an answer: the tokens it used.
type CompletionResponse struct {
	Usage struct {
		TotalTokens int64 `json:"total_tokens"`
	} `json:"usage"`
}

// ServeHTTP admits the request or answers 429, then serves it.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req CompletionRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.PromptTokens < 0 || req.MaxTokens < 1 {
		http.Error(w, `a JSON body {"prompt_tokens": n, "max_tokens": m} with m >= 1`, http.StatusBadRequest)
		return
	}
	now := time.Now()
	c, retry, overloaded := a.admit(now, r.Header.Get("X-Job-Id"), req)
	a.header(w.Header(), now)
	if c == nil {
		w.Header().Set("Retry-After", strconv.FormatInt(int64((retry+time.Second-1)/time.Second), 10))
		msg := "rate limited"
		if overloaded {
			msg = "overloaded"
		}
		http.Error(w, msg, http.StatusTooManyRequests)
		return
	}
	time.Sleep(a.serviceTime())
	used := a.answer(c, req)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Usage-Tokens", strconv.FormatInt(used, 10))
	var resp CompletionResponse
	resp.Usage.TotalTokens = used
	_ = json.NewEncoder(w).Encode(resp)
}

func (a *API) serviceTime() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cfg.Latency/2 + time.Duration(a.rng.Int64N(int64(a.cfg.Latency)+1))
}

// admit applies the overload and the three quotas at now and, if all pass,
// charges the request's estimate. Otherwise it returns how long until it
// could pass, and whether the overload refused it.
func (a *API) admit(now time.Time, job string, req CompletionRequest) (c *Charge, retry time.Duration, overloaded bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := &a.stats
	if !a.started {
		a.started, a.first, s.First = true, now, now
		s.OverloadFrom, s.OverloadTo = now.Add(a.cfg.OverloadAt), now.Add(a.cfg.OverloadAt+a.cfg.OverloadFor)
	}
	if notBefore, ok := a.retryAfter[job]; ok {
		delete(a.retryAfter, job)
		if now.Before(notBefore) {
			s.RetriedEarly++
		} else {
			s.RetriedInTime++
		}
	}
	a.expire(now)
	if a.cfg.OverloadFor > 0 && !now.Before(s.OverloadFrom) && now.Before(s.OverloadTo) {
		s.OverloadRefused++
		a.retryAfter[job] = now.Add(a.cfg.OverloadRetry)
		return nil, a.cfg.OverloadRetry, true
	}
	estimate := req.PromptTokens + req.MaxTokens
	used := a.tokensInWindow()
	switch {
	case a.inFlight >= a.cfg.MaxConcurrent:
		s.QuotaRefused++
		return nil, a.cfg.Latency / 2, false
	case len(a.arrivals) >= a.cfg.RPS:
		s.QuotaRefused++
		return nil, a.arrivals[0].Add(time.Second).Sub(now), false
	case used+estimate > a.cfg.TokenLimit:
		s.QuotaRefused++
		return nil, a.tokensFreeAt(estimate).Sub(now), false
	}
	a.arrivals = append(a.arrivals, now)
	c = &Charge{At: now, Tokens: estimate, Estimate: estimate}
	a.window = append(a.window, c)
	a.inFlight++
	s.Accepted++
	s.TokensEstimated += estimate
	s.Last = now
	s.PeakRequests = max(s.PeakRequests, len(a.arrivals))
	s.PeakTokens = max(s.PeakTokens, used+estimate)
	return c, 0, false
}

// answer picks the completion's real length, adjusts the request's charge
// to it, and returns the tokens used.
func (a *API) answer(c *Charge, req CompletionRequest) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	completion := req.MaxTokens/4 + a.rng.Int64N(req.MaxTokens-req.MaxTokens/4+1)
	used := req.PromptTokens + completion
	c.Tokens, c.AnsweredAt = used, time.Now()
	a.inFlight-- // before the answer: the client releases its slot after reading it
	a.stats.TokensUsed += used
	a.stats.Charges = append(a.stats.Charges, *c)
	return used
}

// expire forgets what has left the windows at now. Called with a.mu held.
func (a *API) expire(now time.Time) {
	k := 0
	for k < len(a.arrivals) && !a.arrivals[k].After(now.Add(-time.Second)) {
		k++
	}
	a.arrivals = a.arrivals[k:]
	k = 0
	for k < len(a.window) && !a.window[k].At.After(now.Add(-a.cfg.TokenWindow)) {
		k++
	}
	a.window = a.window[k:]
}

func (a *API) tokensInWindow() int64 {
	var n int64
	for _, c := range a.window {
		n += c.Tokens
	}
	return n
}

// tokensFreeAt returns when enough of the window has left it for cost
// more, if nothing else comes or is answered.
func (a *API) tokensFreeAt(cost int64) time.Time {
	over := a.tokensInWindow() + cost - a.cfg.TokenLimit
	for _, c := range a.window {
		if over -= c.Tokens; over <= 0 {
			return c.At.Add(a.cfg.TokenWindow)
		}
	}
	return a.first // unreachable: a cost above the limit is never sent
}

// header sets the quotas' fields as of now: the IETF RateLimit-Policy and
// RateLimit, and the x-ratelimit-* pairs in OpenAI's form.
func (a *API) header(h http.Header, now time.Time) {
	a.mu.Lock()
	requests := max(a.cfg.RPS-len(a.arrivals), 0)
	tokens := max(a.cfg.TokenLimit-a.tokensInWindow(), 0)
	var requestsReset, tokensReset time.Duration
	if len(a.arrivals) > 0 {
		requestsReset = a.arrivals[0].Add(time.Second).Sub(now)
	}
	if len(a.window) > 0 {
		tokensReset = a.window[len(a.window)-1].At.Add(a.cfg.TokenWindow).Sub(now)
	}
	a.mu.Unlock()
	w := int64((a.cfg.TokenWindow + time.Second - 1) / time.Second)
	h.Set("RateLimit-Policy", fmt.Sprintf(`"requests";q=%d;w=1, "tokens";q=%d;qu="tokens";w=%d`, a.cfg.RPS, a.cfg.TokenLimit, w))
	h.Set("RateLimit", fmt.Sprintf(`"requests";r=%d;t=%d, "tokens";r=%d;t=%d`, requests, Seconds(requestsReset), tokens, Seconds(tokensReset)))
	h.Set("X-Ratelimit-Limit-Requests", strconv.Itoa(a.cfg.RPS))
	h.Set("X-Ratelimit-Remaining-Requests", strconv.Itoa(requests))
	h.Set("X-Ratelimit-Reset-Requests", requestsReset.Round(time.Millisecond).String())
	h.Set("X-Ratelimit-Limit-Tokens", strconv.FormatInt(a.cfg.TokenLimit, 10))
	h.Set("X-Ratelimit-Remaining-Tokens", strconv.FormatInt(tokens, 10))
	h.Set("X-Ratelimit-Reset-Tokens", tokensReset.Round(time.Millisecond).String())
}

// Seconds is d in whole seconds, rounded up, as Retry-After and the
// RateLimit fields count it.
func Seconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// Snapshot returns what the API saw so far: overload 429s still awaiting
// their retry count as never retried.
func (a *API) Snapshot() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.stats
	s.NeverRetried = len(a.retryAfter)
	s.Charges = append([]Charge(nil), a.stats.Charges...)
	return s
}
