module github.com/sluicehq/sluice/bench

go 1.26.0

require (
	github.com/dunglas/httpsfv v1.1.2
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/go-chi/httprate v0.16.1
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/grpc-ecosystem/go-grpc-middleware/v2 v2.3.4
	github.com/platinummonkey/go-concurrency-limits v0.8.0
	github.com/redis/go-redis/v9 v9.22.0
	github.com/sluicehq/sluice v0.0.0
	github.com/sluicehq/sluice/grpclimit v0.0.0
	github.com/sluicehq/sluice/redislimit v0.0.0
	github.com/sony/gobreaker/v2 v2.4.0
	go.uber.org/goleak v1.3.0
	go.uber.org/ratelimit v0.3.1
	golang.org/x/sync v0.23.0
	golang.org/x/time v0.15.0
	google.golang.org/grpc v1.85.0
)

require (
	github.com/benbjohnson/clock v1.3.0 // indirect
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/influxdata/tdigest v0.0.1 // indirect
	github.com/klauspost/cpuid/v2 v2.2.10 // indirect
	github.com/zeebo/xxh3 v1.1.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261110000943-09e21b237f2c // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/sluicehq/sluice => ../

replace github.com/sluicehq/sluice/redislimit => ../redislimit

replace github.com/sluicehq/sluice/grpclimit => ../grpclimit
