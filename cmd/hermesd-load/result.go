package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// result is one load run.
type result struct {
	Platform, Target, Model string
	Convs, Messages         int // conversations, messages asked per conversation
	PacingOn                bool
	Store, Ingress          string // hermesd's store and Telegram ingress
	NMembers                int

	Sent, Answered                        int
	Missing, Unexpected, Misrouted, Fails int
	Duplicates                            int // answers sent twice (errors unless a member was killed)
	Notes                                 int // background notes, not errors
	Examples                              []string

	Elapsed              time.Duration // first message to last reply
	Rate                 float64       // answered messages per second
	P50, P90, P99, Worst time.Duration

	// Bot is the bot's report; for several members their sum (CPU, log
	// lines) and the highest peak RSS; Members holds each one's.
	Bot        botReport
	Members    []botReport
	Failover   *failover     // -kill-after
	StoreCPU   time.Duration // PostgreSQL's processes during the load (0 for SQLite: it is in the bot)
	DriverCPU  time.Duration // this process (fakes, model, driver) during the load
	ModelCalls int64
	ModelBytes int64 // request bytes the model received (-model marker)
	ModelConns int64 // TCP connections the model accepted (-model marker)
	APICalls   map[string]int
	FakeErrors []string
	Pacing     *pacingVerdict
}

func newResult(o options, l *ledger, members []botReport) *result {
	r := &result{Platform: o.platform, Target: o.target, Model: o.model, Convs: len(l.convs), Messages: o.messages,
		PacingOn: o.pacing, Store: o.store, Ingress: o.ingress, NMembers: len(members),
		Answered: len(l.latencies), Unexpected: l.unexpected, Misrouted: l.misrouted, Fails: l.failed, Duplicates: l.duplicates}
	if len(members) == 1 {
		r.Bot = members[0]
	} else {
		r.Members = members
		for _, m := range members {
			r.Bot.PeakRSS = max(r.Bot.PeakRSS, m.PeakRSS)
			r.Bot.CPU += m.CPU
			r.Bot.Warnings += m.Warnings
			r.Bot.Errors += m.Errors
			r.Bot.LibWarnings += m.LibWarnings
			r.Bot.LibErrors += m.LibErrors
			if len(r.Bot.First) < maxExamples {
				r.Bot.First = append(r.Bot.First, m.First...)
			}
		}
	}
	if o.store == "postgres" && o.pgDurable {
		r.Store += " (fsync on)"
	}
	r.Failover = l.failover()
	r.Missing = l.missing()
	r.Examples, r.Notes = l.examples, l.notes
	for _, c := range l.convs {
		r.Sent += c.sent
	}
	if !l.last.IsZero() {
		r.Elapsed = l.last.Sub(l.first)
	}
	if r.Elapsed > 0 {
		r.Rate = float64(r.Answered) / r.Elapsed.Seconds()
	}
	lat := slices.Clone(l.latencies)
	slices.Sort(lat)
	r.P50, r.P90, r.P99 = percentile(lat, 50), percentile(lat, 90), percentile(lat, 99)
	if len(lat) > 0 {
		r.Worst = lat[len(lat)-1]
	}
	return r
}

// Errors counts everything that went wrong: replies missing, unexpected,
// duplicated, misrouted or refused, error lines in the bot's log, failures
// the fakes saw. After a kill -9 the verdict is what the fake received:
// duplicates (sends the killed member made but had not recorded) and the
// survivors' error lines about the dead member are reported, not counted.
func (r *result) Errors() int {
	n := r.Missing + r.Unexpected + r.Misrouted + r.Fails + len(r.FakeErrors)
	if r.Failover == nil {
		n += r.Duplicates + r.Bot.Errors
	}
	return n
}

// CPUPerMessage is the bot process's CPU time per answered message.
func (r *result) CPUPerMessage() time.Duration {
	if r.Answered == 0 {
		return 0
	}
	return r.Bot.CPU / time.Duration(r.Answered)
}

// AllCPUPerMessage adds PostgreSQL's CPU to CPUPerMessage: with SQLite the
// store's work is in the bot process already.
func (r *result) AllCPUPerMessage() time.Duration {
	if r.Answered == 0 {
		return 0
	}
	return (r.Bot.CPU + r.StoreCPU) / time.Duration(r.Answered)
}

// percentile is the nearest-rank p-th percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func printResult(w io.Writer, r *result) {
	pacing := "off"
	if r.PacingOn {
		pacing = "on"
	}
	fmt.Fprintf(w, "%s / %s: %d conversations × up to %d messages, pacing %s, model %s\n",
		r.Platform, r.Target, r.Convs, r.Messages, pacing, r.Model)
	if r.Target == "hermesd" {
		setup := "1 process"
		if r.NMembers > 1 {
			setup = fmt.Sprintf("%d cluster members", r.NMembers)
		}
		ingress := ""
		if r.Platform == "telegram" {
			ingress = ", Telegram " + r.Ingress
		}
		fmt.Fprintf(w, "  setup        %s, store %s%s\n", setup, r.Store, ingress)
	}
	fmt.Fprintf(w, "  answered     %d of %d in %v: %.0f msg/s\n", r.Answered, r.Sent, r.Elapsed.Round(time.Millisecond), r.Rate)
	fmt.Fprintf(w, "  latency      p50 %s  p90 %s  p99 %s  max %s\n", ms(r.P50), ms(r.P90), ms(r.P99), ms(r.Worst))
	fmt.Fprintf(w, "  errors       %d (missing %d, unexpected %d, duplicates %d, misrouted %d, refused %d, bot error logs %d, fake %d)\n",
		r.Errors(), r.Missing, r.Unexpected, r.Duplicates, r.Misrouted, r.Fails, r.Bot.Errors, len(r.FakeErrors))
	if f := r.Failover; f != nil {
		fmt.Fprintf(w, "  failover     kill -9 of member %d, which held %d sessions: %d answered again (%d had a message waiting), first answer p50 %s max %s; lost %d, duplicates %d\n",
			f.Member, f.Sessions, f.Answered, f.Waiting, ms(f.P50), ms(f.Max), r.Missing, r.Duplicates)
	}
	if r.Notes > 0 {
		fmt.Fprintf(w, "  notes        %d background review notes (not replies, not errors)\n", r.Notes)
	}
	for _, e := range r.Examples {
		fmt.Fprintf(w, "    e.g. %s\n", e)
	}
	for _, e := range r.FakeErrors {
		fmt.Fprintf(w, "    fake: %s\n", e)
	}
	where := "bot process"
	if r.Bot.InProcess {
		where = "this process (bot, driver and fakes: -inprocess)"
	}
	if len(r.Members) > 1 {
		var each []string
		for i, m := range r.Members {
			each = append(each, fmt.Sprintf("%d: %s", i, mib(m.PeakRSS)))
		}
		fmt.Fprintf(w, "  memory       peak RSS per member %s\n", strings.Join(each, ", "))
	} else {
		fmt.Fprintf(w, "  memory       peak RSS %s (%s)\n", mib(r.Bot.PeakRSS), where)
	}
	if r.Bot.CPU > 0 {
		procs := "the bot process"
		if len(r.Members) > 1 {
			procs = fmt.Sprintf("the %d members", len(r.Members))
		}
		fmt.Fprintf(w, "  cpu          %.2fs in %s, %v per message; %.2fs in the driver and fakes\n",
			r.Bot.CPU.Seconds(), procs, r.CPUPerMessage().Round(time.Microsecond), r.DriverCPU.Seconds())
		if r.StoreCPU > 0 {
			fmt.Fprintf(w, "               %.2fs in PostgreSQL: %v per message with it\n", r.StoreCPU.Seconds(), r.AllCPUPerMessage().Round(time.Microsecond))
		}
	}
	fmt.Fprintf(w, "  model calls  %d (%.2f per message)", r.ModelCalls, float64(r.ModelCalls)/float64(max(r.Answered, 1)))
	if r.ModelBytes > 0 && r.ModelCalls > 0 {
		fmt.Fprintf(w, ", %.1f KiB per request, %d connections", float64(r.ModelBytes)/float64(r.ModelCalls)/1024, r.ModelConns)
	}
	fmt.Fprintln(w)
	var calls []string
	for _, m := range slices.Sorted(maps.Keys(r.APICalls)) {
		calls = append(calls, fmt.Sprintf("%s %d", m, r.APICalls[m]))
	}
	fmt.Fprintf(w, "  api calls    %s\n", strings.Join(calls, ", "))
	if r.Bot.Warnings > 0 || r.Bot.Errors > 0 {
		fmt.Fprintf(w, "  bot log      %d warnings, %d errors; first: %s\n", r.Bot.Warnings, r.Bot.Errors, strings.Join(r.Bot.First, " | "))
	}
	if r.Bot.LibWarnings > 0 || r.Bot.LibErrors > 0 {
		fmt.Fprintf(w, "  protoactor   %d warnings, %d errors in its own log lines (peers not up yet, or gone), not counted\n",
			r.Bot.LibWarnings, r.Bot.LibErrors)
	}
	if r.Pacing != nil {
		r.Pacing.print(w)
	}
}

// medians of the figures of several runs of one target.
type medians struct {
	Rate         float64
	P50, P99     time.Duration
	RSS          int64
	CPUPerMsg    time.Duration
	AllCPUPerMsg time.Duration // with PostgreSQL's
	Errors, Runs int
}

func medianOf(rs []*result) medians {
	m := medians{Runs: len(rs)}
	m.Rate = median(rs, func(r *result) float64 { return r.Rate })
	m.P50 = time.Duration(median(rs, func(r *result) float64 { return float64(r.P50) }))
	m.P99 = time.Duration(median(rs, func(r *result) float64 { return float64(r.P99) }))
	m.RSS = int64(median(rs, func(r *result) float64 { return float64(r.Bot.PeakRSS) }))
	m.CPUPerMsg = time.Duration(median(rs, func(r *result) float64 { return float64(r.CPUPerMessage()) }))
	m.AllCPUPerMsg = time.Duration(median(rs, func(r *result) float64 { return float64(r.AllCPUPerMessage()) }))
	for _, r := range rs {
		m.Errors += r.Errors()
	}
	return m
}

// median of f over rs (the mean of the middle two for an even count).
func median[T any](rs []T, f func(T) float64) float64 {
	if len(rs) == 0 {
		return 0
	}
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}

func printMedians(w io.Writer, target string, rs []*result) {
	m := medianOf(rs)
	with := ""
	if m.AllCPUPerMsg != m.CPUPerMsg {
		with = fmt.Sprintf(" (%v with PostgreSQL's)", m.AllCPUPerMsg.Round(time.Microsecond))
	}
	fmt.Fprintf(w, "%s, median of %d runs: %.0f msg/s, p50 %s, p99 %s, peak RSS %s, CPU %v per message%s, %d errors in all\n",
		target, m.Runs, m.Rate, ms(m.P50), ms(m.P99), mib(m.RSS), m.CPUPerMsg.Round(time.Microsecond), with, m.Errors)
}
