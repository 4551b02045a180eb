package scenario

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// ModelCapacity is the model's C in the side by side: it starts at C,
// halves, then doubles back, offered twice C throughout.
const ModelCapacity = 100

// ModelPhases returns the side by side's timeline, each phase dur long
// with its first second (half a second after a change) not counted for
// goodput and p99.
func ModelPhases(dur time.Duration) []Phase {
	return []Phase{
		{Servers: ModelCapacity, Dur: dur, Skip: time.Second},
		{Servers: ModelCapacity / 2, Dur: dur, Skip: time.Second / 2},
		{Servers: ModelCapacity, Dur: dur, Skip: time.Second / 2},
	}
}

// ModelRate is the offered load: twice the highest capacity.
const ModelRate = 2 * ModelCapacity * float64(time.Second/ModelService)

// RunAdaptive drives a fresh limiter of s through phases on the model.
// Call it in a testing/synctest bubble: the model sleeps on its timeline.
func RunAdaptive(s AdaptiveSubject, phases []Phase) ([]PhaseResult, error) {
	l, err := s.New()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	defer l.Close()
	m := NewDownstream(l, ModelRate, 29)
	res := make([]PhaseResult, len(phases))
	for i, ph := range phases {
		res[i] = m.Run(ph)
	}
	return res, nil
}

// AdaptiveTable formats the results of subjects (one slice per subject,
// a result per phase) as a Markdown table.
func AdaptiveTable(subjects []AdaptiveSubject, phases []Phase, results [][]PhaseResult) string {
	var b strings.Builder
	b.WriteString("| subject | controller | C | within 20% of C after | goodput | p99 | shed | refused | highest limit |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for i, s := range subjects {
		for j, r := range results[i] {
			c := fmt.Sprint(phases[j].Servers)
			if j > 0 {
				c = fmt.Sprintf("%d → %d", phases[j-1].Servers, phases[j].Servers)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %.1f%% | %v | %d | %d | %d |\n", s.Name, s.Algo, c,
				settledCell(r.Settled), 100*r.Goodput, r.P99.Round(100*time.Microsecond), r.Shed, r.Refused, r.MaxLimit)
		}
	}
	return b.String()
}

func settledCell(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return d.String()
}

// AdaptiveGoals formats, for each sluice subject and phase, the issue's
// goal against the best peer in that phase, the one of the highest
// goodput (a peer that serves less is no one's pick, however low its
// p99): converged at least as fast (a peer that never converged is beaten
// by any that did), goodput no lower, p99 no higher. Beside the
// goodput's verdict it says by how many requests the subject served more
// or fewer than the best peer, of how many the phase could serve: a
// verdict on one request is not one on a hundred.
func AdaptiveGoals(subjects []AdaptiveSubject, phases []Phase, results [][]PhaseResult) string {
	var b strings.Builder
	b.WriteString("| sluice subject | C | best peer | converged as fast | goodput no lower | served − best peer's | p99 no higher |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- |\n")
	for i, s := range subjects {
		if !strings.HasPrefix(s.Name, "sluice") {
			continue
		}
		for j, r := range results[i] {
			k := bestPeer(subjects, results, j)
			best := results[k][j]
			capacity := phases[j].Servers * int((phases[j].Dur-phases[j].Skip)/ModelService)
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %+d of %d | %s |\n", s.Name, phases[j].Servers, subjects[k].Name,
				yesNo(r.Settled >= 0 && (best.Settled < 0 || r.Settled <= best.Settled)),
				yesNo(r.Goodput >= best.Goodput), int(math.Round((r.Goodput-best.Goodput)*float64(capacity))), capacity,
				yesNo(r.P99 <= best.P99))
		}
	}
	return b.String()
}

// bestPeer is the index of the peer of the highest goodput in phase j,
// the lower p99 between equals.
func bestPeer(subjects []AdaptiveSubject, results [][]PhaseResult, j int) int {
	best := -1
	for i, s := range subjects {
		if strings.HasPrefix(s.Name, "sluice") {
			continue
		}
		r := results[i][j]
		if best < 0 || r.Goodput > results[best][j].Goodput ||
			r.Goodput == results[best][j].Goodput && r.P99 < results[best][j].P99 {
			best = i
		}
	}
	return best
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}
