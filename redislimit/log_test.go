package redislimit_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// lines is a slog.Handler that keeps every record's message, level and
// attributes.
type lines struct {
	mu   sync.Mutex
	recs []line
}

type line struct {
	msg   string
	level slog.Level
	attrs map[string]string
}

func (l *lines) Enabled(context.Context, slog.Level) bool { return true }
func (l *lines) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *lines) WithGroup(string) slog.Handler            { return l }
func (l *lines) Handle(_ context.Context, r slog.Record) error {
	ln := line{msg: r.Message, level: r.Level, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool { ln.attrs[a.Key] = a.Value.String(); return true })
	l.mu.Lock()
	l.recs = append(l.recs, ln)
	l.mu.Unlock()
	return nil
}

func (l *lines) msgs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var m []string
	for _, r := range l.recs {
		m = append(m, r.msg)
	}
	return m
}

func (l *lines) at(i int) line {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recs[i]
}

// A Limiter tells an outage in two lines, failed closed at the first call
// that finds Redis out of reach and recovered at the first it answers
// after, however many requests fail between; none while Redis answers.
func TestAnOutageIsTwoLinesNotOnePerRequest(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t, noRetries)
	logs := &lines{}
	l := newLimiter(t, c, "logged", algorithms.PerSecond(1000), 100,
		redislimit.WithLogger(slog.New(logs)), redislimit.WithProbeInterval(-1))
	for range 3 {
		_, err := l.TryAcquire(1)
		require.NoError(t, err)
	}
	assert.Empty(t, logs.msgs(), "no line while Redis answers")
	s.Kill()
	for range 5 {
		_, err := l.Acquire(context.Background(), 1)
		require.ErrorIs(t, err, redislimit.ErrUnavailable)
	}
	require.Equal(t, []string{"sluice: redis failed closed"}, logs.msgs())
	down := logs.at(0)
	assert.Equal(t, slog.LevelWarn, down.level)
	assert.Equal(t, "logged", down.attrs["sluice.redis.key"])
	assert.NotEmpty(t, down.attrs["error"])

	require.NoError(t, s.Restart())
	var err error
	for range 5 { // a connection the restart closed may fail the first call
		if _, err = l.TryAcquire(1); err == nil {
			break
		}
	}
	require.NoError(t, err)
	for range 3 {
		_, err := l.TryAcquire(1)
		require.NoError(t, err)
	}
	require.Equal(t, []string{"sluice: redis failed closed", "sluice: redis recovered"}, logs.msgs())
	up := logs.at(1)
	assert.Equal(t, slog.LevelInfo, up.level)
	assert.Equal(t, "logged", up.attrs["sluice.redis.key"])
	assert.NotEmpty(t, up.attrs["down_for"])
}

// With WithFailOpen the line says the requests fell open; a Keyed's lines
// name its prefix, never one of its keys. A script's error reply (a key
// of another type) is not an outage and writes none.
func TestFellOpenAndAKeyedsPrefixAreTold(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t, noRetries)
	wlogs, klogs, ologs := &lines{}, &lines{}, &lines{}
	w, err := redislimit.NewWindow(c, "logged-window", algorithms.PerSecond(10), redislimit.WithLogger(slog.New(wlogs)))
	require.NoError(t, err)
	t.Cleanup(func() { w.Close() })
	require.NoError(t, c.LPush(context.Background(), "logged-window", "x").Err())
	_, err = w.TryAcquire(1)
	require.ErrorIs(t, err, redislimit.ErrUnavailable)
	assert.Empty(t, wlogs.msgs(), "an error reply is Redis answering")

	k, err := redislimit.NewKeyed(c, "tenant:", algorithms.PerSecond(100), 10,
		redislimit.WithLogger(slog.New(klogs)), redislimit.WithProbeInterval(-1))
	require.NoError(t, err)
	t.Cleanup(func() { k.Close() })
	open := newLimiter(t, c, "logged-open", algorithms.PerSecond(100), 10,
		redislimit.WithLogger(slog.New(ologs)), redislimit.WithFailOpen(1, 1), redislimit.WithProbeInterval(-1))
	s.Kill()
	for _, key := range []string{"acme", "globex", "initech"} {
		_, err = k.TryAcquire(key, 1)
		require.ErrorIs(t, err, redislimit.ErrUnavailable)
		_, err = open.TryAcquire(1)
		require.NoError(t, err, "fell open to the local limiter")
	}
	require.Equal(t, []string{"sluice: redis failed closed"}, klogs.msgs())
	assert.Equal(t, "tenant:", klogs.at(0).attrs["sluice.redis.key"])
	require.Equal(t, []string{"sluice: redis fell open"}, ologs.msgs())
	assert.Equal(t, "logged-open", ologs.at(0).attrs["sluice.redis.key"])
}
