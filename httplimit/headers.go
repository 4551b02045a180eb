package httplimit

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The fields of draft-ietf-httpapi-ratelimit-headers, in both directions:
// the middleware formats them, and a client (a RoundTripper pacing itself)
// parses them. Both are Structured Fields (RFC 8941) Lists of Items whose
// value names a policy and whose parameters carry the numbers:
//
//	RateLimit-Policy: "default";q=100;w=60
//	RateLimit: "default";r=50;t=30
//
// Durations are whole seconds, rounded up, so that a client that waits what
// it is told never comes back too early; Retry-After likewise (an exact one
// second is 1, anything above is 2).

// Field names.
const (
	HeaderPolicy     = "RateLimit-Policy"
	HeaderLimit      = "RateLimit"
	HeaderRetryAfter = "Retry-After"
)

// Policy is one member of a RateLimit-Policy field: a quota policy the
// server applies.
type Policy struct {
	Name   string        // the policy's identifier
	Quota  int64         // q: the quota, in quota units
	Unit   string        // qu: the quota unit, "" for the default ("requests")
	Window time.Duration // w: the time window, whole seconds; 0 when absent
}

// ServiceLimit is one member of a RateLimit field: the quota currently
// available under a policy.
type ServiceLimit struct {
	Name      string        // the policy it applies to
	Remaining int64         // r: the available quota
	Reset     time.Duration // t: the effective window, whole seconds; -1 when absent
}

// ErrMalformed is matched by every error of the parsers: a field that is
// not a List of Items with the parameters the draft requires. The draft
// says a client must ignore such a field.
var ErrMalformed = errors.New("httplimit: malformed field")

// Seconds returns d in whole seconds rounded up, as delay-seconds: 0 for
// d <= 0, 1 for anything up to and including one second.
func Seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}

// MaxInteger is the largest Integer a Structured Field can carry (RFC
// 9651 3.3.1: at most 15 digits). The formatters write larger numbers as
// it, so that every field they write parses back.
const MaxInteger = 999_999_999_999_999

// sfInteger clamps n to what an sf-integer of these fields can say: 0 to
// MaxInteger.
func sfInteger(n int64) int64 { return min(max(n, 0), MaxInteger) }

// FormatPolicy returns p as a RateLimit-Policy member. A quota or a window
// beyond MaxInteger is written as MaxInteger.
func FormatPolicy(p Policy) string {
	var b strings.Builder
	writeString(&b, p.Name)
	fmt.Fprintf(&b, ";q=%d", sfInteger(p.Quota))
	if p.Unit != "" {
		b.WriteString(";qu=")
		writeString(&b, p.Unit)
	}
	if w := Seconds(p.Window); w > 0 {
		fmt.Fprintf(&b, ";w=%d", sfInteger(w))
	}
	return b.String()
}

// FormatServiceLimit returns l as a RateLimit member; a negative Reset
// leaves t out. A number beyond MaxInteger is written as MaxInteger.
func FormatServiceLimit(l ServiceLimit) string {
	var b strings.Builder
	writeString(&b, l.Name)
	fmt.Fprintf(&b, ";r=%d", sfInteger(l.Remaining))
	if l.Reset >= 0 {
		fmt.Fprintf(&b, ";t=%d", sfInteger(Seconds(l.Reset)))
	}
	return b.String()
}

// writeString writes s as an sf-string: printable ASCII, with " and \
// escaped; any other byte becomes '?', since the syntax has no escape for
// it.
func writeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c > 0x7e:
			b.WriteByte('?')
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}

// ParsePolicies parses the values of RateLimit-Policy fields (a response
// may split the list over several). Members without the required q, or
// whose q or w is not a non-negative Integer, make the whole field
// malformed; parameters the draft does not define are ignored.
func ParsePolicies(fields ...string) ([]Policy, error) {
	items, err := parseList(strings.Join(fields, ","))
	if err != nil {
		return nil, err
	}
	out := make([]Policy, 0, len(items))
	for _, it := range items {
		p := Policy{Name: it.name}
		q, ok := it.params["q"]
		if !ok {
			return nil, fmt.Errorf("%w: policy %q has no q", ErrMalformed, it.name)
		}
		if p.Quota, err = nonNegative(q, "q"); err != nil {
			return nil, err
		}
		if v, ok := it.params["w"]; ok {
			w, err := nonNegative(v, "w")
			if err != nil || w == 0 {
				return nil, fmt.Errorf("%w: policy %q: w must be a positive number of seconds", ErrMalformed, it.name)
			}
			p.Window = seconds(uint64(w)) // a window too long for a Duration is the longest
		}
		if v, ok := it.params["qu"]; ok {
			if v.kind != kString {
				return nil, fmt.Errorf("%w: policy %q: qu must be a String", ErrMalformed, it.name)
			}
			p.Unit = v.s
		}
		out = append(out, p)
	}
	return out, nil
}

// ParseServiceLimits parses the values of RateLimit fields. A member
// without the required r, or whose r or t is not a non-negative Integer,
// makes the whole field malformed.
func ParseServiceLimits(fields ...string) ([]ServiceLimit, error) {
	items, err := parseList(strings.Join(fields, ","))
	if err != nil {
		return nil, err
	}
	out := make([]ServiceLimit, 0, len(items))
	for _, it := range items {
		l := ServiceLimit{Name: it.name, Reset: -1}
		r, ok := it.params["r"]
		if !ok {
			return nil, fmt.Errorf("%w: limit %q has no r", ErrMalformed, it.name)
		}
		if l.Remaining, err = nonNegative(r, "r"); err != nil {
			return nil, err
		}
		if v, ok := it.params["t"]; ok {
			t, err := nonNegative(v, "t")
			if err != nil {
				return nil, fmt.Errorf("%w: limit %q: t must be a number of seconds", ErrMalformed, it.name)
			}
			l.Reset = seconds(uint64(t)) // a reset too far for a Duration is the farthest
		}
		out = append(out, l)
	}
	return out, nil
}

// ParseRetryAfter reads a Retry-After value, delay-seconds or an HTTP-date
// (relative to now), and reports whether it is one.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if allDigits(v) {
		// delay-seconds is any run of digits: too many for 64 bits is a
		// range error that leaves n at its largest, a wait longer than a
		// Duration holds.
		n, _ := strconv.ParseUint(v, 10, 64)
		return seconds(n), true
	}
	// The three forms of HTTP-date a recipient must accept (RFC 9110).
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// maxSeconds bounds the seconds a duration here can hold.
const maxSeconds = math.MaxInt64 / uint64(time.Second)

// allDigits reports whether v is ASCII digits only.
func allDigits(v string) bool {
	for i := range len(v) {
		if !isDigit(v[i]) {
			return false
		}
	}
	return true
}

// seconds is n seconds, or the longest Duration of whole seconds.
func seconds(n uint64) time.Duration { return time.Duration(min(n, maxSeconds)) * time.Second }

func nonNegative(v bare, name string) (int64, error) {
	if v.kind != kInteger || v.i < 0 {
		return 0, fmt.Errorf("%w: %s must be a non-negative Integer", ErrMalformed, name)
	}
	return v.i, nil
}

// The parser below reads the part of RFC 8941 these fields use: a List of
// Items (no Inner Lists), each a String or a Token with Parameters whose
// values are bare items (Integer, Decimal, String, Token, Byte Sequence,
// Boolean). It is strict where the RFC is: anything else fails the field.

type kind uint8

const (
	kInteger kind = iota
	kDecimal
	kString
	kToken
	kBytes
	kBoolean
)

type bare struct {
	kind kind
	i    int64
	s    string
}

type item struct {
	name   string
	params map[string]bare
}

type parser struct {
	s string
	i int
}

func malformed(p *parser, what string) error {
	return fmt.Errorf("%w: %s at offset %d", ErrMalformed, what, p.i)
}

func parseList(s string) ([]item, error) {
	p := &parser{s: s}
	p.skipSP()
	var items []item
	if p.i == len(p.s) {
		return nil, fmt.Errorf("%w: empty list", ErrMalformed)
	}
	for {
		it, err := p.item()
		if err != nil {
			return nil, err
		}
		items = append(items, it)
		p.skipOWS()
		if p.i == len(p.s) {
			return items, nil
		}
		if p.s[p.i] != ',' {
			return nil, malformed(p, "expected ','")
		}
		p.i++
		p.skipOWS()
		if p.i == len(p.s) {
			return nil, malformed(p, "trailing ','")
		}
	}
}

func (p *parser) item() (item, error) {
	if p.i < len(p.s) && p.s[p.i] == '(' {
		return item{}, malformed(p, "inner list")
	}
	v, err := p.bare()
	if err != nil {
		return item{}, err
	}
	if v.kind != kString && v.kind != kToken {
		return item{}, malformed(p, "the policy must be a String or a Token")
	}
	it := item{name: v.s, params: map[string]bare{}}
	for p.i < len(p.s) && p.s[p.i] == ';' {
		p.i++
		p.skipSP()
		k, err := p.key()
		if err != nil {
			return item{}, err
		}
		val := bare{kind: kBoolean, i: 1}
		if p.i < len(p.s) && p.s[p.i] == '=' {
			p.i++
			if val, err = p.bare(); err != nil {
				return item{}, err
			}
		}
		it.params[k] = val // a later duplicate wins (RFC 8941 4.2.3.2)
	}
	return it, nil
}

func (p *parser) key() (string, error) {
	start := p.i
	if p.i >= len(p.s) || !(isLower(p.s[p.i]) || p.s[p.i] == '*') {
		return "", malformed(p, "expected a parameter key")
	}
	for p.i < len(p.s) && (isLower(p.s[p.i]) || isDigit(p.s[p.i]) || strings.IndexByte("_-.*", p.s[p.i]) >= 0) {
		p.i++
	}
	return p.s[start:p.i], nil
}

func (p *parser) bare() (bare, error) {
	if p.i >= len(p.s) {
		return bare{}, malformed(p, "expected an item")
	}
	switch c := p.s[p.i]; {
	case c == '-' || isDigit(c):
		return p.number()
	case c == '"':
		return p.str()
	case c == ':':
		return p.bytes()
	case c == '?':
		if p.i+1 < len(p.s) && (p.s[p.i+1] == '0' || p.s[p.i+1] == '1') {
			v := bare{kind: kBoolean, i: int64(p.s[p.i+1] - '0')}
			p.i += 2
			return v, nil
		}
		return bare{}, malformed(p, "bad boolean")
	case isAlpha(c) || c == '*':
		start := p.i
		for p.i < len(p.s) && isTokenChar(p.s[p.i]) {
			p.i++
		}
		return bare{kind: kToken, s: p.s[start:p.i]}, nil
	}
	return bare{}, malformed(p, "unexpected character")
}

func (p *parser) number() (bare, error) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	if p.i == len(p.s) || !isDigit(p.s[p.i]) {
		return bare{}, malformed(p, "bad number") // a digit comes first (RFC 8941)
	}
	digits, dot := 0, -1
	for p.i < len(p.s) {
		c := p.s[p.i]
		if isDigit(c) {
			digits++
		} else if c == '.' && dot < 0 {
			dot = digits
		} else {
			break
		}
		p.i++
	}
	if digits == 0 {
		return bare{}, malformed(p, "bad number")
	}
	text := p.s[start:p.i]
	if dot >= 0 {
		// Decimals are not used by these fields; they only need checking.
		if dot > 12 || digits-dot < 1 || digits-dot > 3 {
			return bare{}, malformed(p, "bad decimal")
		}
		return bare{kind: kDecimal, s: text}, nil
	}
	if digits > 15 {
		return bare{}, malformed(p, "integer out of range")
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return bare{}, malformed(p, "bad integer")
	}
	return bare{kind: kInteger, i: n}, nil
}

func (p *parser) str() (bare, error) {
	p.i++ // the opening quote
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\':
			if p.i >= len(p.s) || (p.s[p.i] != '"' && p.s[p.i] != '\\') {
				return bare{}, malformed(p, "bad escape")
			}
			b.WriteByte(p.s[p.i])
			p.i++
		case c == '"':
			return bare{kind: kString, s: b.String()}, nil
		case c < 0x20 || c > 0x7e:
			return bare{}, malformed(p, "bad character in string")
		default:
			b.WriteByte(c)
		}
	}
	return bare{}, malformed(p, "unterminated string")
}

func (p *parser) bytes() (bare, error) {
	p.i++
	start := p.i
	for p.i < len(p.s) && p.s[p.i] != ':' {
		c := p.s[p.i]
		if !(isAlpha(c) || isDigit(c) || c == '+' || c == '/' || c == '=') {
			return bare{}, malformed(p, "bad byte sequence")
		}
		p.i++
	}
	if p.i >= len(p.s) {
		return bare{}, malformed(p, "unterminated byte sequence")
	}
	v := bare{kind: kBytes, s: p.s[start:p.i]}
	p.i++
	return v, nil
}

func (p *parser) skipSP() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *parser) skipOWS() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// isTokenChar is tchar, ':' and '/' (RFC 8941 3.3.4).
func isTokenChar(c byte) bool {
	return isAlpha(c) || isDigit(c) || strings.IndexByte("!#$%&'*+-.^_`|~:/", c) >= 0
}
