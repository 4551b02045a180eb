package httplimit

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// What a response asks its client to wait, read from every field an API
// uses to say so. A client trusts none of them blindly: every value is
// parsed strictly, anything malformed is ignored (as the RateLimit draft
// says of its own fields), and the result is a duration from 0 up to about
// 292 years, which the caller caps (Transport's WithMaxPause).

// ParseWait returns how long the fields of h, a response received at now,
// ask before the next request, and whether any asks:
//
//  1. Retry-After, delay-seconds or an HTTP-date, when it is valid: the
//     server's word for this response, which wins over the rest. A date in
//     the past asks for no wait (0, true).
//  2. Otherwise the longest reset among the quotas h says are used up:
//     members of RateLimit with r=0 (their t, or when t is absent the w
//     of the RateLimit-Policy member of that name, the longest a window
//     can take to reset); x-ratelimit-remaining: 0 with
//     x-ratelimit-reset, and x-ratelimit-remaining-NAME: 0 with
//     x-ratelimit-reset-NAME (OpenAI's requests and tokens, GitHub's
//     unsuffixed pair); anthropic-ratelimit-NAME-remaining: 0 with
//     anthropic-ratelimit-NAME-reset.
//
// A reset is a duration with units as Go writes them ("6m0s", "1s",
// "20ms", "1.5s"), a number of seconds ("30", "0.5"), a Unix time in
// seconds (a number of 10^9 or more: "1735689600"), or an RFC 3339 or HTTP
// date. Negative values, garbage and quotas with some remaining are
// ignored; numbers too large for a time.Duration count as the largest one.
// It only reads h, and is safe for concurrent use.
func ParseWait(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Values(HeaderRetryAfter); len(v) > 0 {
		if d, ok := ParseRetryAfter(v[0], now); ok {
			return d, true
		}
	}
	var wait time.Duration
	found := false
	longest := func(d time.Duration, ok bool) {
		if ok {
			wait, found = max(wait, d), true
		}
	}
	longest(exhaustedServiceLimits(h))
	for key, values := range h {
		if len(values) == 0 {
			continue
		}
		switch {
		case hasPrefixFold(key, xRemaining):
			if exhausted(values[0]) {
				longest(parseReset(h.Get(xReset+key[len(xRemaining):]), now))
			}
		case hasPrefixFold(key, anthropicPrefix) && hasSuffixFold(key, anthropicRemaining):
			if exhausted(values[0]) {
				name := key[:len(key)-len(anthropicRemaining)]
				longest(parseReset(h.Get(name+anthropicReset), now))
			}
		}
	}
	return wait, found
}

// The header names ParseWait reads, in http.CanonicalHeaderKey's form;
// x-ratelimit-remaining is also the prefix of its suffixed forms.
const (
	xRemaining         = "X-Ratelimit-Remaining"
	xReset             = "X-Ratelimit-Reset"
	anthropicPrefix    = "Anthropic-Ratelimit-"
	anthropicRemaining = "-Remaining"
	anthropicReset     = "-Reset"
)

// exhaustedServiceLimits returns the longest reset of the RateLimit members
// with nothing remaining.
func exhaustedServiceLimits(h http.Header) (time.Duration, bool) {
	fields := h.Values(HeaderLimit)
	if len(fields) == 0 {
		return 0, false
	}
	limits, err := ParseServiceLimits(fields...)
	if err != nil {
		return 0, false
	}
	var policies []Policy // parsed once, only if some member lacks t
	var wait time.Duration
	found := false
	for _, l := range limits {
		if l.Remaining != 0 {
			continue
		}
		if l.Reset >= 0 {
			wait, found = max(wait, l.Reset), true
			continue
		}
		if policies == nil {
			policies, _ = ParsePolicies(h.Values(HeaderPolicy)...)
			if policies == nil {
				policies = []Policy{}
			}
		}
		for _, p := range policies {
			if p.Name == l.Name && p.Window > 0 {
				wait, found = max(wait, p.Window), true
			}
		}
	}
	return wait, found
}

// exhausted reports whether v, a remaining count, is exactly zero: "0", or
// "0" written with more zeros. Anything else, garbage included, is not.
func exhausted(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > 20 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] != '0' {
			return false
		}
	}
	return true
}

// unixThreshold is the smallest number of seconds read as a Unix time
// rather than a delay: 10^9 s is 31 years, no API's reset, and as a Unix
// time September 2001.
const unixThreshold = 1_000_000_000

// parseReset reads a reset value (see ParseWait) received at now.
func parseReset(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > 64 || v[0] == '-' || v[0] == '+' {
		return 0, false
	}
	if secs, frac, ok := decimalSeconds(v); ok {
		if secs >= unixThreshold {
			return untilUnix(secs, frac, now), true
		}
		return time.Duration(secs)*time.Second + frac, true
	}
	if isDigit(v[0]) || v[0] == '.' {
		if d, err := time.ParseDuration(v); err == nil {
			return d, true // never negative: the sign was refused above
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return max(t.Sub(now), 0), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// decimalSeconds parses digits with at most one '.' and nine digits after
// it; a whole part too large for a Duration saturates at maxSeconds.
func decimalSeconds(v string) (secs int64, frac time.Duration, ok bool) {
	whole, fraction, dot := strings.Cut(v, ".")
	if whole == "" && (!dot || fraction == "") || len(fraction) > 9 {
		return 0, 0, false
	}
	if !allDigits(whole) || !allDigits(fraction) {
		return 0, 0, false
	}
	if whole != "" {
		n, err := strconv.ParseUint(whole, 10, 64)
		if err != nil || n > maxSeconds {
			n = maxSeconds // only digits: the error is a range error
		}
		secs = int64(n)
	}
	if fraction != "" {
		n, _ := strconv.ParseUint(fraction+"000000000"[len(fraction):], 10, 64)
		frac = time.Duration(n)
	}
	if uint64(secs) == maxSeconds {
		frac = 0 // maxSeconds·10^9 plus a fraction could overflow
	}
	return secs, frac, true
}

// untilUnix returns the time from now until Unix time secs and frac, 0 if
// it has passed, saturating for instants beyond what a Duration holds. The
// fraction counts: a reset at 10.5 s is not one at 10 s.
func untilUnix(secs int64, frac time.Duration, now time.Time) time.Duration {
	if secs >= int64(maxSeconds) {
		return seconds(maxSeconds)
	}
	return max(time.Unix(secs, int64(frac)).Sub(now), 0)
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix)
}
