// Command redisquota runs three worker processes that share one quota
// through Redis, and prints what each got: together they stay within the
// quota, however the work is spread between them.
//
//	go run -C examples/redisquota .                           # starts its own redis-server
//	go run -C examples/redisquota . -addr localhost:6379
//
// Each worker is this program started again with -worker; it calls
// Acquire on the shared limit from a few goroutines for the run's length
// and reports how many permits it got. The parent reads Redis TIME before
// and after, and prints the bound burst + rate·elapsed that the total may
// not exceed.
//
//	go run -C examples/redisquota . -api                      # examples/apiclient's demo, in three processes
//	go run -C examples/redisquota . -api -h                   # its flags (-api comes first)
//
// With -api it runs examples/apiclient's demo (the same local API, quotas,
// jobs and goals; internal/demoapi) with its jobs dealt out to three client
// processes that share the API's request and token quotas through Redis
// (apidemo.go; each process is apiworker.go), and prints one summary.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// The quota the workers share: 100 per second, bursts of 10.
var (
	rate  = algorithms.PerSecond(100)
	burst = int64(10)
)

const key = "redisquota:example"

func main() {
	switch {
	case len(os.Args) > 1 && os.Args[1] == "-api":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		code := apiMain(ctx, os.Args[2:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	case len(os.Args) > 1 && os.Args[1] == "-api-worker":
		if err := apiWork(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "redisquota -api-worker:", err)
			os.Exit(1)
		}
		return
	}
	addr := flag.String("addr", "", "Redis address (host:port); empty: start a redis-server of our own")
	workers := flag.Int("workers", 3, "worker processes")
	d := flag.Duration("d", 2*time.Second, "how long the workers run")
	worker := flag.Bool("worker", false, "run as one worker (the parent starts them)")
	flag.Parse()
	if *worker {
		if err := work(os.Stdout, *addr, *d); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Stdout, *addr, *workers, *d); err != nil {
		fmt.Fprintln(os.Stderr, "redisquota:", err)
		os.Exit(1)
	}
}

// run starts the workers against addr (or a server of its own) and prints
// what each got.
func run(out io.Writer, addr string, workers int, d time.Duration) error {
	if addr == "" {
		dir, err := os.MkdirTemp("", "redisquota-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		s, err := redistest.Start(dir)
		if errors.Is(err, redistest.ErrNotFound) {
			return errors.New("redis-server not found: install it, or pass -addr")
		}
		if err != nil {
			return err
		}
		defer s.Close()
		addr = s.Addr
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	if err := c.Del(ctx, key).Err(); err != nil {
		return err
	}
	t0, err := c.Time(ctx).Result()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	got := make([]int, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(self, "-worker", "-addr", addr, "-d", d.String())
			cmd.Stderr = os.Stderr
			o, err := cmd.Output()
			if err != nil {
				errs[i] = fmt.Errorf("worker %d: %w", i+1, err)
				return
			}
			got[i], errs[i] = strconv.Atoi(strings.TrimSpace(string(o)))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	t1, err := c.Time(ctx).Result()
	if err != nil {
		return err
	}
	total := 0
	for i, n := range got {
		fmt.Fprintf(out, "worker %d: %d permits\n", i+1, n)
		total += n
	}
	elapsed := t1.Sub(t0)
	bound := burst + int64(elapsed)*rate.Count/int64(rate.Per)
	fmt.Fprintf(out, "total: %d permits in %v of Redis time; the quota (%v, burst %d) allows at most %d\n",
		total, elapsed.Round(time.Millisecond), rate, burst, bound)
	if int64(total) > bound {
		return fmt.Errorf("the workers got %d permits, above the quota's %d", total, bound)
	}
	return nil
}

// work is one worker: four goroutines acquire from the shared limit until
// d has passed; it prints how many permits they got.
func work(out io.Writer, addr string, d time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	lim, err := redislimit.New(c, key, rate, burst)
	if err != nil {
		return err
	}
	defer lim.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var mu sync.Mutex
	n := 0
	var wg sync.WaitGroup
	var failed error
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				_, err := lim.Acquire(ctx, 1)
				mu.Lock()
				switch {
				case err == nil:
					n++
				case ctx.Err() != nil, errors.Is(err, context.DeadlineExceeded):
					mu.Unlock()
					return // the run is over, or ends before the next permit
				default:
					failed = err
					mu.Unlock()
					return
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if failed != nil {
		return failed
	}
	w := bufio.NewWriter(out)
	fmt.Fprintln(w, n)
	return w.Flush()
}
