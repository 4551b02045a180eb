module github.com/sluicehq/sluice/examples/errgroup

go 1.25.0

require (
	github.com/sluicehq/sluice v0.0.0
	go.uber.org/goleak v1.3.0
	golang.org/x/sync v0.22.0
)

replace github.com/sluicehq/sluice => ../..
