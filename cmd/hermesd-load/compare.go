package main

import (
	"context"
	"fmt"
	"io"
	"time"
)

// The goals of the load issue, with pacing off: hermesd reaches at least two
// thirds of the echo bot's messages/s in the same run, a p99 within twice
// the echo bot's, no errors, and 5,000 messages/s across 1,000 chats if the
// driver allows it (if the echo bot gets there).
const (
	goalRateShare = 2.0 / 3
	goalP99Factor = 2.0
	goalRate      = 5000
	goalChats     = 1000
)

// runCompare runs the echo bot, then hermesd, each in its own process,
// -runs times, and prints both and the ratios against the goals.
func runCompare(ctx context.Context, o options, stdout, stderr io.Writer) error {
	var echo, herm []*result
	for i := range o.runs {
		for _, target := range []string{"echo", "hermesd"} {
			oo := o
			oo.target = target
			if o.cpuProfile != "" {
				oo.cpuProfile = o.cpuProfile + "." + target
				if o.runs > 1 {
					oo.cpuProfile += fmt.Sprintf(".%d", i+1)
				}
			}
			r, err := runLoad(ctx, oo, stderr)
			if err != nil {
				return fmt.Errorf("run %d, %s: %w", i+1, target, err)
			}
			printResult(stdout, r)
			if target == "echo" {
				echo = append(echo, r)
			} else {
				herm = append(herm, r)
			}
		}
	}
	if !printComparison(stdout, o, echo, herm) {
		return fmt.Errorf("%w: see the comparison", errGoalsMissed)
	}
	return nil
}

// printComparison prints the medians and the per-run ratios (paired runs
// share the machine's mood) against the goals, and reports whether all
// applicable goals were met.
func printComparison(w io.Writer, o options, echo, herm []*result) bool {
	e, h := medianOf(echo), medianOf(herm)
	type pair struct{ e, h *result }
	pairs := make([]pair, len(echo))
	for i := range echo {
		pairs[i] = pair{echo[i], herm[i]}
	}
	rateShare := median(pairs, func(p pair) float64 { return p.h.Rate / max(p.e.Rate, 1e-9) })
	p99Factor := median(pairs, func(p pair) float64 { return float64(p.h.P99) / float64(max(p.e.P99, 1)) })
	mark := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "FAIL"
	}
	okRate, okP99, okErr := rateShare >= goalRateShare, p99Factor <= goalP99Factor, h.Errors == 0 && e.Errors == 0

	fmt.Fprintf(w, "\ncomparison, %s, %d conversations × %d messages, median of %d run(s)\n", o.platform, herm[0].Convs, o.messages, len(herm))
	fmt.Fprintf(w, "  %-16s %12s %12s %10s   %s\n", "", "echo", "hermesd", "hermesd/echo", "goal")
	fmt.Fprintf(w, "  %-16s %12.0f %12.0f %10.2f     ≥ %.2f  %s\n", "messages/s", e.Rate, h.Rate, rateShare, goalRateShare, mark(okRate))
	fmt.Fprintf(w, "  %-16s %12s %12s %10.2f\n", "p50 latency", ms(e.P50), ms(h.P50), float64(h.P50)/float64(max(e.P50, 1)))
	fmt.Fprintf(w, "  %-16s %12s %12s %10.2f     ≤ %.2f  %s\n", "p99 latency", ms(e.P99), ms(h.P99), p99Factor, goalP99Factor, mark(okP99))
	fmt.Fprintf(w, "  %-16s %12d %12d %10s     0     %s\n", "errors (all runs)", e.Errors, h.Errors, "", mark(okErr))
	fmt.Fprintf(w, "  %-16s %12s %12s %10.2f\n", "peak RSS", mib(e.RSS), mib(h.RSS), float64(h.RSS)/float64(max(e.RSS, 1)))
	fmt.Fprintf(w, "  %-16s %12v %12v %10.2f\n", "CPU per message", e.CPUPerMsg.Round(time.Microsecond), h.CPUPerMsg.Round(time.Microsecond),
		float64(h.CPUPerMsg)/float64(max(e.CPUPerMsg, 1)))
	ok := okRate && okP99 && okErr
	switch {
	case herm[0].Convs < goalChats:
		fmt.Fprintf(w, "  %d msg/s across %d chats: not checked (this run has %d conversations)\n", goalRate, goalChats, herm[0].Convs)
	case e.Rate < goalRate:
		fmt.Fprintf(w, "  %d msg/s across %d chats: not applicable, the driver does not allow it here (echo reaches %.0f); hermesd %.0f\n",
			goalRate, goalChats, e.Rate, h.Rate)
	default:
		fmt.Fprintf(w, "  %d msg/s across %d chats: hermesd %.0f  %s\n", goalRate, goalChats, h.Rate, mark(h.Rate >= goalRate))
		ok = ok && h.Rate >= goalRate
	}
	if o.runs > 1 {
		fmt.Fprintf(w, "  per run (msg/s share, p99 factor):")
		for _, p := range pairs {
			fmt.Fprintf(w, " %.2f/%.2f", p.h.Rate/max(p.e.Rate, 1e-9), float64(p.h.P99)/float64(max(p.e.P99, 1)))
		}
		fmt.Fprintln(w)
	}
	return ok
}
