package httplimit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/httplimit"
)

func TestSecondsRoundUp(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int64
	}{
		{0, 0}, {-time.Second, 0}, {1, 1}, {time.Millisecond, 1}, {time.Second, 1},
		{time.Second + 1, 2}, {2 * time.Second, 2}, {59*time.Second + 999*time.Millisecond, 60},
	} {
		assert.Equal(t, c.want, httplimit.Seconds(c.d), "%v", c.d)
	}
}

func TestFormatTheDraftExamples(t *testing.T) {
	assert.Equal(t, `"default";q=100;w=10`, httplimit.FormatPolicy(httplimit.Policy{Name: "default", Quota: 100, Window: 10 * time.Second}))
	assert.Equal(t, `"peruser";q=65535;qu="content-bytes";w=10`,
		httplimit.FormatPolicy(httplimit.Policy{Name: "peruser", Quota: 65535, Unit: "content-bytes", Window: 10 * time.Second}))
	assert.Equal(t, `"default";q=5`, httplimit.FormatPolicy(httplimit.Policy{Name: "default", Quota: 5}), "no window, no w")
	assert.Equal(t, `"default";r=50;t=30`, httplimit.FormatServiceLimit(httplimit.ServiceLimit{Name: "default", Remaining: 50, Reset: 30 * time.Second}))
	assert.Equal(t, `"default";r=999`, httplimit.FormatServiceLimit(httplimit.ServiceLimit{Name: "default", Remaining: 999, Reset: -1}))
	assert.Equal(t, `"a\"b\\c?";r=0;t=1`, httplimit.FormatServiceLimit(httplimit.ServiceLimit{Name: "a\"b\\c\n", Reset: 10 * time.Millisecond}))
}

func TestParseTheDraftExamples(t *testing.T) {
	ps, err := httplimit.ParsePolicies(`"burst";q=100;w=60,"daily";q=1000;w=86400`)
	require.NoError(t, err)
	assert.Equal(t, []httplimit.Policy{{Name: "burst", Quota: 100, Window: time.Minute}, {Name: "daily", Quota: 1000, Window: 24 * time.Hour}}, ps)
	ps, err = httplimit.ParsePolicies(`"peruser";q=65535;qu="content-bytes";w=10;pk=:sdfjLJUOUH==:`, `permin;q=50;w=60`)
	require.NoError(t, err, "split over two fields, a Token name")
	assert.Equal(t, []httplimit.Policy{{Name: "peruser", Quota: 65535, Unit: "content-bytes", Window: 10 * time.Second}, {Name: "permin", Quota: 50, Window: time.Minute}}, ps)

	ls, err := httplimit.ParseServiceLimits(`"default";r=50;t=30`)
	require.NoError(t, err)
	assert.Equal(t, []httplimit.ServiceLimit{{Name: "default", Remaining: 50, Reset: 30 * time.Second}}, ls)
	ls, err = httplimit.ParseServiceLimits(`"default";r=999;pk=:dHJpYWwxMjEzMjM=:, "x";r=0;t=7;acme-burst=?1;note="hi";f=1.5`)
	require.NoError(t, err)
	assert.Equal(t, []httplimit.ServiceLimit{{Name: "default", Remaining: 999, Reset: -1}, {Name: "x", Remaining: 0, Reset: 7 * time.Second}}, ls)
}

func TestMalformedFieldsAreErrors(t *testing.T) {
	for _, bad := range []string{
		``, ` `, `"a";r=1,`, `"a";r=-1`, `"a";t=1`, `"a";r=1.5`, `"a";r="1"`, `("a");r=1`, `1;r=1`, `"a";r=1 "b"`,
		`"unterminated;r=1`, `"a";R=1`, `"a";r=1234567890123456`, `"a";r=1;t=:x`, `"a\x";r=1`, `"a";r=1;;`,
	} {
		_, err := httplimit.ParseServiceLimits(bad)
		assert.ErrorIs(t, err, httplimit.ErrMalformed, "%q", bad)
	}
	for _, bad := range []string{`"a"`, `"a";q=1;w=0`, `"a";q=1;w=-5`, `"a";q=1;qu=requests`, `"a";q=x`} {
		_, err := httplimit.ParsePolicies(bad)
		assert.ErrorIs(t, err, httplimit.ErrMalformed, "%q", bad)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2015, 10, 21, 7, 28, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"120", 2 * time.Minute, true}, {" 1 ", time.Second, true}, {"0", 0, true},
		{"Wed, 21 Oct 2015 07:28:30 GMT", 30 * time.Second, true},
		{"Wed, 21 Oct 2015 07:27:00 GMT", 0, true},
		{"", 0, false}, {"-1", 0, false}, {"1.5", 0, false}, {"soon", 0, false},
	} {
		got, ok := httplimit.ParseRetryAfter(c.in, now)
		assert.Equal(t, c.ok, ok, "%q", c.in)
		assert.Equal(t, c.want, got, "%q", c.in)
	}
	huge, ok := httplimit.ParseRetryAfter("18446744073709551615", now)
	assert.True(t, ok)
	assert.Greater(t, huge, 290*365*24*time.Hour, "saturates, never wraps")
	// delay-seconds is any run of digits: beyond 64 bits is the longest
	// wait too, not garbage to retry through at once.
	beyond, ok := httplimit.ParseRetryAfter("99999999999999999999", now)
	assert.True(t, ok)
	assert.Equal(t, huge, beyond)
}

// Whatever the parsers are given, they return an error or members that
// format and parse back to themselves, and never panic.
func FuzzParseServiceLimits(f *testing.F) {
	for _, s := range []string{`"default";r=50;t=30`, `a;r=1, b;r=2;t=3;pk=:AA==:`, `"x";r=0;t=7;f=1.5;b=?0`, `("a")`, `"`, `"a";r=1;t=`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ls, err := httplimit.ParseServiceLimits(s)
		if err != nil {
			require.ErrorIs(t, err, httplimit.ErrMalformed)
			return
		}
		require.NotEmpty(t, ls)
		for _, l := range ls {
			require.GreaterOrEqual(t, l.Remaining, int64(0))
			back, err := httplimit.ParseServiceLimits(httplimit.FormatServiceLimit(l))
			require.NoError(t, err)
			want := l
			want.Name = sanitized(l.Name)
			require.Equal(t, []httplimit.ServiceLimit{want}, back)
		}
	})
}

func FuzzParsePolicies(f *testing.F) {
	for _, s := range []string{`"burst";q=100;w=60,"daily";q=1000;w=86400`, `p;q=1;qu="content-bytes"`, `"a";q=0`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := httplimit.ParsePolicies(s)
		if err != nil {
			require.ErrorIs(t, err, httplimit.ErrMalformed)
			return
		}
		for _, p := range ps {
			back, err := httplimit.ParsePolicies(httplimit.FormatPolicy(p))
			require.NoError(t, err)
			want := p
			want.Name, want.Unit = sanitized(p.Name), sanitized(p.Unit)
			require.Equal(t, []httplimit.Policy{want}, back)
		}
	})
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "Wed, 21 Oct 2015 07:28:00 GMT", "", "-3"} {
		f.Add(s)
	}
	now := time.Date(2015, 10, 21, 7, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		if d, ok := httplimit.ParseRetryAfter(s, now); ok {
			require.GreaterOrEqual(t, d, time.Duration(0))
		}
	})
}

// sanitized is what formatting does to a name: bytes outside printable
// ASCII become '?'.
func sanitized(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	return string(b)
}
