module github.com/sluicehq/sluice/cmd/sluice

go 1.25.0

require (
	github.com/sluicehq/sluice v0.0.0
	go.uber.org/goleak v1.3.0
)

replace github.com/sluicehq/sluice => ../..
