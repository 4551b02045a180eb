package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// api is the rate-limited API the demo calls: a stand-in for an LLM
// completion endpoint, with a requests quota, a tokens quota and a cap on
// concurrent requests, and a few seconds of overload in the middle of the
// run. It is written independently of sluice: no code of sluice decides
// here, and it reads time itself, at each request's arrival, never the
// client's stamps.
//
//   - requests: at most rps accepted arrivals in any half-open window
//     (now-1s, now];
//   - tokens: at most tokenLimit tokens in any half-open window
//     (now-tokenWindow, now], charged as some LLM APIs document it: the
//     request's prompt and max_tokens on arrival, adjusted to what the
//     completion really used when it answers (X-Usage-Tokens, and usage in
//     the JSON body). The completion is shorter than max_tokens: the
//     estimate a client acquires is larger than the cost it settles;
//   - concurrency: at most maxConcurrent requests being served;
//   - overload: from overloadAt to overloadAt+overloadFor after the first
//     request, every request is answered 429 with Retry-After, as an API
//     short of capacity does, and nothing is charged.
//
// A refusal by a quota is a 429 with the exact Retry-After (whole seconds,
// rounded up); every answer carries the quotas' RateLimit-Policy and
// RateLimit fields and the x-ratelimit-* headers.
type api struct {
	cfg apiConfig

	mu       sync.Mutex
	rng      *rand.Rand
	started  bool
	first    time.Time   // the first arrival: the clock of the overload
	arrivals []time.Time // accepted, within the last second
	window   []*charge   // accepted, within the last token window
	inFlight int
	// retryAfter is, per job refused for the overload, the earliest
	// instant its retry was allowed to arrive.
	retryAfter map[string]time.Time

	stats apiStats
}

type apiConfig struct {
	rps           int
	tokenLimit    int64
	tokenWindow   time.Duration
	maxConcurrent int
	latency       time.Duration // mean; each request takes 0.5 to 1.5 of it
	overloadAt    time.Duration
	overloadFor   time.Duration
	overloadRetry time.Duration // the Retry-After of an overloaded answer
	seed          uint64
}

// charge is one accepted request in the token window.
type charge struct {
	at         time.Time
	tokens     int64 // the estimate until it answers, then the real usage
	estimate   int64
	answeredAt time.Time // zero until it answers
}

// apiStats is what the API saw.
type apiStats struct {
	accepted        int
	quotaRefused    int // 429s because the client exceeded a quota
	overloadRefused int // 429s of the overload
	retriedInTime   int // overload 429s whose retry came after its Retry-After
	retriedEarly    int // ... before it
	neverRetried    int // overload 429s not followed by a retry of the job
	tokensUsed      int64
	tokensEstimated int64
	peakRequests    int   // most requests accepted in one 1 s window
	peakTokens      int64 // most tokens charged in one token window, at an arrival
	first, last     time.Time
	overloadFrom    time.Time
	overloadTo      time.Time
	charges         []charge // every accepted request, as charged in the end
}

func newAPI(c apiConfig) *api {
	return &api{cfg: c, rng: rand.New(rand.NewPCG(c.seed, 2)), retryAfter: map[string]time.Time{}}
}

// completionRequest is the body of a request: what an LLM API is asked.
type completionRequest struct {
	PromptTokens int64 `json:"prompt_tokens"`
	MaxTokens    int64 `json:"max_tokens"`
}

type completionResponse struct {
	Usage struct {
		TotalTokens int64 `json:"total_tokens"`
	} `json:"usage"`
}

func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
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
	var resp completionResponse
	resp.Usage.TotalTokens = used
	_ = json.NewEncoder(w).Encode(resp)
}

func (a *api) serviceTime() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cfg.latency/2 + time.Duration(a.rng.Int64N(int64(a.cfg.latency)+1))
}

// admit applies the overload and the three quotas at now and, if all pass,
// charges the request's estimate. Otherwise it returns how long until it
// could pass, and whether the overload refused it.
func (a *api) admit(now time.Time, job string, req completionRequest) (c *charge, retry time.Duration, overloaded bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := &a.stats
	if !a.started {
		a.started, a.first, s.first = true, now, now
		s.overloadFrom, s.overloadTo = now.Add(a.cfg.overloadAt), now.Add(a.cfg.overloadAt+a.cfg.overloadFor)
	}
	if notBefore, ok := a.retryAfter[job]; ok {
		delete(a.retryAfter, job)
		if now.Before(notBefore) {
			s.retriedEarly++
		} else {
			s.retriedInTime++
		}
	}
	a.expire(now)
	if a.cfg.overloadFor > 0 && !now.Before(s.overloadFrom) && now.Before(s.overloadTo) {
		s.overloadRefused++
		a.retryAfter[job] = now.Add(a.cfg.overloadRetry)
		return nil, a.cfg.overloadRetry, true
	}
	estimate := req.PromptTokens + req.MaxTokens
	used := a.tokensInWindow()
	switch {
	case a.inFlight >= a.cfg.maxConcurrent:
		s.quotaRefused++
		return nil, a.cfg.latency / 2, false
	case len(a.arrivals) >= a.cfg.rps:
		s.quotaRefused++
		return nil, a.arrivals[0].Add(time.Second).Sub(now), false
	case used+estimate > a.cfg.tokenLimit:
		s.quotaRefused++
		return nil, a.tokensFreeAt(estimate).Sub(now), false
	}
	a.arrivals = append(a.arrivals, now)
	c = &charge{at: now, tokens: estimate, estimate: estimate}
	a.window = append(a.window, c)
	a.inFlight++
	s.accepted++
	s.tokensEstimated += estimate
	s.last = now
	s.peakRequests = max(s.peakRequests, len(a.arrivals))
	s.peakTokens = max(s.peakTokens, used+estimate)
	return c, 0, false
}

// answer picks the completion's real length, adjusts the request's charge
// to it, and returns the tokens used.
func (a *api) answer(c *charge, req completionRequest) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	completion := req.MaxTokens/4 + a.rng.Int64N(req.MaxTokens-req.MaxTokens/4+1)
	used := req.PromptTokens + completion
	c.tokens, c.answeredAt = used, time.Now()
	a.inFlight-- // before the answer: the client releases its slot after reading it
	a.stats.tokensUsed += used
	a.stats.charges = append(a.stats.charges, *c)
	return used
}

// expire forgets what has left the windows at now. Called with a.mu held.
func (a *api) expire(now time.Time) {
	k := 0
	for k < len(a.arrivals) && !a.arrivals[k].After(now.Add(-time.Second)) {
		k++
	}
	a.arrivals = a.arrivals[k:]
	k = 0
	for k < len(a.window) && !a.window[k].at.After(now.Add(-a.cfg.tokenWindow)) {
		k++
	}
	a.window = a.window[k:]
}

func (a *api) tokensInWindow() int64 {
	var n int64
	for _, c := range a.window {
		n += c.tokens
	}
	return n
}

// tokensFreeAt returns when enough of the window has left it for cost
// more, if nothing else comes or is answered.
func (a *api) tokensFreeAt(cost int64) time.Time {
	over := a.tokensInWindow() + cost - a.cfg.tokenLimit
	for _, c := range a.window {
		if over -= c.tokens; over <= 0 {
			return c.at.Add(a.cfg.tokenWindow)
		}
	}
	return a.first // unreachable: a cost above the limit is never sent
}

// header sets the quotas' fields as of now: the IETF RateLimit-Policy and
// RateLimit, and the x-ratelimit-* pairs in OpenAI's form.
func (a *api) header(h http.Header, now time.Time) {
	a.mu.Lock()
	requests := max(a.cfg.rps-len(a.arrivals), 0)
	tokens := max(a.cfg.tokenLimit-a.tokensInWindow(), 0)
	var requestsReset, tokensReset time.Duration
	if len(a.arrivals) > 0 {
		requestsReset = a.arrivals[0].Add(time.Second).Sub(now)
	}
	if len(a.window) > 0 {
		tokensReset = a.window[len(a.window)-1].at.Add(a.cfg.tokenWindow).Sub(now)
	}
	a.mu.Unlock()
	w := int64((a.cfg.tokenWindow + time.Second - 1) / time.Second)
	h.Set("RateLimit-Policy", fmt.Sprintf(`"requests";q=%d;w=1, "tokens";q=%d;qu="tokens";w=%d`, a.cfg.rps, a.cfg.tokenLimit, w))
	h.Set("RateLimit", fmt.Sprintf(`"requests";r=%d;t=%d, "tokens";r=%d;t=%d`, requests, seconds(requestsReset), tokens, seconds(tokensReset)))
	h.Set("X-Ratelimit-Limit-Requests", strconv.Itoa(a.cfg.rps))
	h.Set("X-Ratelimit-Remaining-Requests", strconv.Itoa(requests))
	h.Set("X-Ratelimit-Reset-Requests", requestsReset.Round(time.Millisecond).String())
	h.Set("X-Ratelimit-Limit-Tokens", strconv.FormatInt(a.cfg.tokenLimit, 10))
	h.Set("X-Ratelimit-Remaining-Tokens", strconv.FormatInt(tokens, 10))
	h.Set("X-Ratelimit-Reset-Tokens", tokensReset.Round(time.Millisecond).String())
}

func seconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

func (a *api) snapshot() apiStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.stats
	s.neverRetried = len(a.retryAfter)
	s.charges = append([]charge(nil), a.stats.charges...)
	return s
}
