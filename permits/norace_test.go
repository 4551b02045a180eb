//go:build !race

package permits_test

const raceEnabled = false
