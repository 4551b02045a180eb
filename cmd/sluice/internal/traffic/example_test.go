package traffic_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/traffic"
)

func ExampleGenerate() {
	var ps []traffic.Pattern
	for _, s := range []string{"steady:2/s", "spike:3@1.25s,cost=5"} {
		p, err := traffic.Parse(s)
		if err != nil {
			fmt.Println(err)
			return
		}
		ps = append(ps, p)
	}
	arrivals, _, err := traffic.Generate(ps, 2*time.Second, 1, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range arrivals {
		fmt.Println(a.At, a.Cost)
	}
	// Output:
	// 0s 1
	// 500ms 1
	// 1s 1
	// 1.25s 5
	// 1.25s 5
	// 1.25s 5
	// 1.5s 1
}
