package scenario

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/redislimit"
)

// RedisSpec is one shared-limit workload: Callers goroutines deciding in a
// loop for about Run, each decision on one of Keys keys (chosen at
// random per decision when there are several).
type RedisSpec struct {
	Callers int
	Keys    int
	Run     time.Duration
}

// RedisRate and RedisBurst are what every subject is configured with: so
// much that nothing is refused, so that what is measured is the cost of a
// decision, not the limit.
var (
	RedisRate  = algorithms.PerSecond(1_000_000_000)
	RedisBurst = int64(1_000_000)
)

// RedisResult is what one run of a subject measured.
type RedisResult struct {
	Decisions int           // decisions made (all granted)
	Wall      time.Duration // first decision to last
	P50, P99  time.Duration // latency of one decision, as its caller saw it
	Calls     int           // script executions the server counted (EVAL and EVALSHA)
	CallsOver int           // the decisions Calls were counted over, if not all of them
}

// PerSecond is decisions per second.
func (r RedisResult) PerSecond() float64 { return float64(r.Decisions) / r.Wall.Seconds() }

// CallsPerDecision is script executions per decision: over CallsOver
// decisions when it is set (RunRedisAlternating), else over all.
func (r RedisResult) CallsPerDecision() float64 {
	if r.CallsOver > 0 {
		return float64(r.Calls) / float64(r.CallsOver)
	}
	return float64(r.Calls) / float64(r.Decisions)
}

// RedisSubject is one way to decide on a shared limit: New returns the
// decision for key and what to release afterwards.
type RedisSubject struct {
	Name string
	New  func(c *redis.Client, prefix string) (decide func(ctx context.Context, key string) error, stop func(), err error)
}

// RedisSubjects are sluice's redislimit (a Limiter on one key, a Keyed on
// many), go-redis/redis_rate, and the baseline: one call of an integer
// GCRA script per decision, from the caller's goroutine, which is what a
// limiter without an owner to batch for it can do at best.
func RedisSubjects(keys int) []RedisSubject {
	return []RedisSubject{
		{Name: "sluice redislimit", New: func(c *redis.Client, prefix string) (func(context.Context, string) error, func(), error) {
			if keys == 1 {
				l, err := redislimit.New(c, prefix+"one", RedisRate, RedisBurst)
				if err != nil {
					return nil, nil, err
				}
				return func(ctx context.Context, _ string) error { _, err := l.Acquire(ctx, 1); return err }, func() { l.Close() }, nil
			}
			k, err := redislimit.NewKeyed(c, prefix, RedisRate, RedisBurst)
			if err != nil {
				return nil, nil, err
			}
			return func(ctx context.Context, key string) error { _, err := k.Acquire(ctx, key, 1); return err }, func() { k.Close() }, nil
		}},
		{Name: "redis_rate", New: func(c *redis.Client, prefix string) (func(context.Context, string) error, func(), error) {
			l := redis_rate.NewLimiter(c)
			limit := redis_rate.Limit{Rate: int(RedisRate.Count), Burst: int(RedisBurst), Period: RedisRate.Per}
			return func(ctx context.Context, key string) error {
				res, err := l.Allow(ctx, prefix+key, limit)
				if err == nil && res.Allowed != 1 {
					err = fmt.Errorf("redis_rate refused with RetryAfter %v", res.RetryAfter)
				}
				return err
			}, func() {}, nil
		}},
		{Name: "one call per decision", New: func(c *redis.Client, prefix string) (func(context.Context, string) error, func(), error) {
			b := newBaseline(RedisRate, RedisBurst)
			return func(ctx context.Context, key string) error { return b.decide(ctx, c, prefix+key) }, func() {}, nil
		}},
	}
}

// RunRedis runs spec against subject on c's server and returns what it
// measured. Each run uses keys of its own.
func RunRedis(c *redis.Client, subject RedisSubject, spec RedisSpec, run int) (RedisResult, error) {
	res, err := RunRedisTurns(c, []RedisSubject{subject}, spec, run, 1)
	if err != nil {
		return RedisResult{}, err
	}
	return res[0], nil
}

// RunRedisTurns runs spec against every subject, in turns: turns times
// over, each subject in rotation runs for Run/turns with all its callers,
// so that every subject meets the same moments of a machine whose speed
// drifts, and returns what it measured of each over all its turns. Each
// run and subject uses keys of its own.
func RunRedisTurns(c *redis.Client, subjects []RedisSubject, spec RedisSpec, run, turns int) ([]RedisResult, error) {
	keys := make([]string, max(spec.Keys, 1))
	for i := range keys {
		keys[i] = strconv.Itoa(i)
	}
	decides, stop, err := startSubjects(c, subjects, run, spec.Callers, keys[0])
	if err != nil {
		return nil, err
	}
	defer stop()
	res := make([]RedisResult, len(subjects))
	lat := make([][]time.Duration, len(subjects))
	for turn := range turns {
		for k := range subjects {
			i := (turn + k) % len(subjects)
			calls0, err := scriptCalls(c)
			if err != nil {
				return nil, err
			}
			ls, wall, err := redisTurn(decides[i], keys, spec.Callers, spec.Run/time.Duration(turns), uint64(run*turns+turn))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", subjects[i].Name, err)
			}
			calls1, err := scriptCalls(c)
			if err != nil {
				return nil, err
			}
			res[i].Wall += wall
			res[i].Calls += calls1 - calls0
			res[i].Decisions += len(ls)
			lat[i] = append(lat[i], ls...)
		}
	}
	for i := range res {
		slices.Sort(lat[i])
		if len(lat[i]) > 0 {
			res[i].P50, res[i].P99 = lat[i][len(lat[i])/2], lat[i][len(lat[i])*99/100]
		}
	}
	return res, nil
}

// startSubjects makes every subject for run, on keys of its own, and warms
// each up with callers decisions on key at once (loading its scripts,
// opening the connections); stop releases them all.
func startSubjects(c *redis.Client, subjects []RedisSubject, run, callers int, key string) (decides []func(context.Context, string) error, stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, f := range stops {
			f()
		}
	}
	ctx := context.Background()
	for i, sub := range subjects {
		decide, s, err := sub.New(c, fmt.Sprintf("bench:%d:%d:", run, i))
		if err != nil {
			stop()
			return nil, nil, err
		}
		stops = append(stops, s)
		decides = append(decides, decide)
		var warm sync.WaitGroup
		for range callers {
			warm.Add(1)
			go func() {
				defer warm.Done()
				_ = decide(ctx, key)
			}()
		}
		warm.Wait()
	}
	return decides, stop, nil
}

// redisTurn runs callers goroutines deciding in a loop for d and returns
// the latency of every decision and the wall time of the turn.
func redisTurn(decide func(context.Context, string) error, keys []string, callers int, d time.Duration, seed uint64) ([]time.Duration, time.Duration, error) {
	ctx := context.Background()
	lat := make([][]time.Duration, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	begin := time.Now()
	deadline := begin.Add(d)
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), seed))
			ls := make([]time.Duration, 0, 1024)
			for {
				t0 := time.Now()
				if !t0.Before(deadline) {
					break
				}
				key := keys[0]
				if len(keys) > 1 {
					key = keys[rng.IntN(len(keys))]
				}
				if err := decide(ctx, key); err != nil {
					errs[g] = err
					break
				}
				ls = append(ls, time.Since(t0))
			}
			lat[g] = ls
		}()
	}
	wg.Wait()
	wall := time.Since(begin)
	for _, err := range errs {
		if err != nil {
			return nil, 0, err
		}
	}
	return slices.Concat(lat...), wall, nil
}

var cmdstat = regexp.MustCompile(`cmdstat_(eval|evalsha):calls=(\d+)`)

// scriptCalls returns the script executions the server has counted.
func scriptCalls(c *redis.Client) (int, error) {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range cmdstat.FindAllStringSubmatch(info, -1) {
		k, _ := strconv.Atoi(m[2])
		n += k
	}
	return n, nil
}

// AlternateBlock is how many decisions a subject makes in a row in
// RunRedisAlternating before the next takes its turn.
const AlternateBlock = 8

// RunRedisAlternating runs every subject with one caller, in one loop
// that gives each a turn of a few decisions in rotation, for about Run of
// each subject's own time, and returns what it measured of each: so that
// every subject meets the same moments of a machine whose speed drifts
// from one second to the next (a shared guest's does, by ±20%), and the
// ratios of their latencies are the ratios of what they cost. Wall is the
// time a subject spent in its own decisions. The script calls are counted
// first, over a short pass of each subject alone (INFO cannot tell
// interleaved subjects apart).
func RunRedisAlternating(c *redis.Client, subjects []RedisSubject, spec RedisSpec, run int) ([]RedisResult, error) {
	ctx := context.Background()
	decides, stop, err := startSubjects(c, subjects, run, 1, "0")
	if err != nil {
		return nil, err
	}
	defer stop()
	res := make([]RedisResult, len(subjects))
	const pass = 200
	for i, decide := range decides {
		calls0, err := scriptCalls(c)
		if err != nil {
			return nil, err
		}
		for range pass {
			if err := decide(ctx, "0"); err != nil {
				return nil, err
			}
		}
		calls1, err := scriptCalls(c)
		if err != nil {
			return nil, err
		}
		res[i].Calls, res[i].CallsOver = calls1-calls0, pass
	}
	lat := make([][]time.Duration, len(subjects))
	end := time.Now().Add(spec.Run * time.Duration(len(subjects)))
	for turn := 0; time.Now().Before(end); turn++ {
		for k := range decides {
			i := (turn + k) % len(decides)
			for range AlternateBlock {
				t0 := time.Now()
				if err := decides[i](ctx, "0"); err != nil {
					return nil, fmt.Errorf("%s: %w", subjects[i].Name, err)
				}
				d := time.Since(t0)
				lat[i] = append(lat[i], d)
				res[i].Wall += d
			}
		}
	}
	for i := range res {
		slices.Sort(lat[i])
		res[i].Decisions = len(lat[i])
		res[i].P50, res[i].P99 = lat[i][len(lat[i])/2], lat[i][len(lat[i])*99/100]
	}
	return res, nil
}
