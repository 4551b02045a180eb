// Package traffic describes the arrivals the simulator offers to every limit:
// generated patterns and replays of recorded traffic, merged into one
// timeline of (instant, cost) pairs.
//
//	pattern = kind ":" arg { "," arg }
//
//	steady:RATE                    evenly spaced, the n-th at n·PERIOD/COUNT
//	poisson:RATE                   exponential gaps with mean PERIOD/COUNT (seeded)
//	onoff:RATE,on=DUR,off=DUR      steady at RATE during on, silent during off, repeated
//	spike:N@AT{,N@AT}              N arrivals at once at each instant AT
//	csv:PATH                       replay a file of "time,cost" rows (see ReadCSV)
//
// RATE is algorithms.ParseRate's COUNT/PERIOD ("1000/s", "90/1m"); DUR and AT
// are Go durations from the start of the run ("1.5s", "59s", "1m0.5s"). The
// generated kinds also take:
//
//	cost=N    every arrival costs N units (default 1)
//	cost=A-B  each costs a whole number drawn uniformly from A to B (seeded)
//	from=DUR  no arrivals before DUR (steady, poisson, onoff)
//	until=DUR no arrivals from DUR on (default: the end of the run)
//
// Several patterns are merged: every limit sees the union of their arrivals,
// in order of instant, ties in the order the patterns were given. The same
// patterns, duration and seed always give the same arrivals.
//
// A Pattern is a value, safe for concurrent use; Generate shares nothing
// between calls.
package traffic
