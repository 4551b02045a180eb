package redislimit_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// Every process that uses the key "quota:api" with this rate and burst
// shares one quota: here, two limiters stand for two processes.
func Example() {
	client, stop, err := throwaway() // a redis-server on loopback
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	a, _ := redislimit.New(client, "quota:api", algorithms.PerMinute(2), 2)
	defer a.Close()
	b, _ := redislimit.New(client, "quota:api", algorithms.PerMinute(2), 2)
	defer b.Close()

	_, err = a.Acquire(context.Background(), 1)
	fmt.Println("a:", err)
	_, err = b.TryAcquire(1)
	fmt.Println("b:", err)
	_, err = a.TryAcquire(1)
	d, _ := permits.RetryAfter(err)
	fmt.Println("a again:", errors.Is(err, permits.ErrRateLimited), "retry in about", d.Round(10e9))
	// Output:
	// a: <nil>
	// b: <nil>
	// a again: true retry in about 30s
}

// A tokens-per-minute quota shared by two processes: a job acquires its
// estimate and settles what it used, and the other process gets the rest.
func ExampleWindow_Settle() {
	client, stop, err := throwaway() // a redis-server on loopback
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	limit := algorithms.PerMinute(10_000) // tokens
	a, _ := redislimit.NewWindow(client, "quota:tokens", limit)
	defer a.Close()
	b, _ := redislimit.NewWindow(client, "quota:tokens", limit)
	defer b.Close()

	g, _ := a.AcquireGrant(context.Background(), 8_000) // the estimate
	_, err = b.TryAcquire(5_000)
	fmt.Println("b before:", errors.Is(err, permits.ErrRateLimited))
	fmt.Println("a settles:", a.Settle(g, 3_000)) // the response said 3,000
	_, err = b.TryAcquire(5_000)
	fmt.Println("b after:", err)
	// Output:
	// b before: true
	// a settles: <nil>
	// b after: <nil>
}

// throwaway starts a redis-server of its own in a temporary directory and
// returns a client of it, and what closes the client and stops the server.
func throwaway() (*redis.Client, func(), error) {
	dir, err := os.MkdirTemp("", "redislimit-example-")
	if err != nil {
		return nil, nil, err
	}
	server, err := redistest.Start(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	client := redis.NewClient(&redis.Options{Addr: server.Addr})
	return client, func() {
		client.Close()
		server.Close()
		os.RemoveAll(dir)
	}, nil
}
