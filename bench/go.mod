module github.com/sluicehq/sluice/bench

go 1.25

require github.com/sluicehq/sluice v0.0.0

replace github.com/sluicehq/sluice => ../
