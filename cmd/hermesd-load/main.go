// Command hermesd-load drives hermesd — one process on SQLite or
// PostgreSQL, or a cluster of members — or, for comparison, a trivial echo
// bot, with many concurrent conversations through a fake Telegram or
// Discord and an instant fake model, all on 127.0.0.1, and prints messages
// per second, the latency from a user's message to the bot's reply, errors
// (missing, unexpected, duplicated or misrouted replies), the peak RSS and
// CPU of the bot, and after a kill -9 of a cluster member its failover.
//
// Usage:
//
//	hermesd-load [flags]
//
// Examples:
//
//	# hermesd against the fake Telegram, 1,000 chats × 10 messages, pacing off
//	hermesd-load -platform telegram -target hermesd -chats 1000 -messages 10
//
//	# the echo bot, then hermesd, each in its own process; ratios vs the goals
//	hermesd-load -compare -platform telegram -chats 1000 -messages 10
//
//	# Telegram pacing on: check the documented limits are reached, never exceeded
//	hermesd-load -platform telegram -target hermesd -pacing on
//
//	# where hermesd's time goes
//	hermesd-load -target hermesd -cpuprofile hermesd.pprof
//
//	# the same load on PostgreSQL (a throwaway server), through webhooks
//	hermesd-load -store postgres -ingress webhook -chats 100 -messages 20
//
//	# three cluster members over PostgreSQL; then kill -9 the busiest
//	hermesd-load -members 3 -chats 100 -messages 20
//	hermesd-load -members 3 -chats 100 -messages 10 -pause 1s -kill-after 4s -lease-ttl 3s
//
// How it measures: this process runs the fakes and the driver; the measured
// bot runs in a child process (this binary again, with -child), so its peak
// RSS (VmHWM) and CPU time are its own. Every conversation is closed-loop, as
// a chat with a person is: its next message goes out when the reply to the
// previous one arrives, so no busy policy merges messages. Latency runs from
// the fake's injection of the update to the fake's recording of the reply.
// With the default model (-model marker) each message carries a marker
// {load:<conversation>:<seq>} that the model copies into its answer, so a
// reply is matched to exactly the message it answers and a reply in the wrong
// chat is caught as misrouted. Every loop ends by itself: at -messages per
// conversation, or -duration plus -timeout at the latest.
//
// Stores and members: -store postgres starts a throwaway PostgreSQL
// (store/pgtest: initdb and pg_ctl in a temporary directory) with a fresh
// database, counts its processes' CPU apart, and stops it at the end.
// -members N (N > 1 implies -store postgres) starts N children as cluster
// members (HERMES_CLUSTER=on, each with its own HTTP, cluster and webhook
// ports on 127.0.0.1, all listed in HERMES_CLUSTER_MEMBERS) and starts the
// load once every member sees N members in GET /api/cluster. Telegram
// updates then come by webhook: the fake pushes them to a round-robin
// balancer in this process, which forwards each to the next member's
// TELEGRAM_WEBHOOK_LISTEN (-ingress webhook does the same for one member).
// A Discord cluster is refused: its gateway is held by one elected member.
// The report sums CPU over the members and gives each one's peak RSS.
//
// Failover: -kill-after D asks every member at D into the load which
// sessions it holds (GET /api/cluster), takes the one holding the most out
// of the balancer and kills it with SIGKILL. For each of its sessions the
// report gives the time from the kill (or, for a session with no message
// waiting then, from its next message) to its first answer, p50 and max;
// messages lost (never answered: each was accepted into the store before
// its webhook was answered); and duplicates (an answer sent twice: a send
// the killed member made without recording its receipt, which the new
// owner repeats, as Telegram has no idempotency key). After a kill the
// verdict is what the fake received: duplicates and the survivors' log
// errors are reported, not counted as errors. -pause spaces a
// conversation's messages (half to one and a half times it, by
// conversation, so that they do not send in waves) and lets a small load
// span the kill.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errGoalsMissed):
		fmt.Fprintln(os.Stderr, "hermesd-load:", err)
		os.Exit(1)
	case err != nil:
		fmt.Fprintln(os.Stderr, "hermesd-load:", err)
		os.Exit(2)
	}
}

// run parses args and runs the child, one load run, or a comparison.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if o.child {
		// The report goes to file descriptor 3, a pipe from the parent: a
		// library in the bot may print to stdout (protoactor's cluster
		// prints a banner).
		report := os.NewFile(reportFD, "report")
		defer report.Close()
		return runChild(ctx, o, stdin, report)
	}
	if o.driverProf != "" {
		stop, err := startCPUProfile(o.driverProf)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stop()) }()
	}
	if o.compare {
		return runCompare(ctx, o, stdout, stderr)
	}
	var results []*result
	for i := range o.runs {
		r, err := runLoad(ctx, o, stderr)
		if err != nil {
			return fmt.Errorf("run %d of %d: %w", i+1, o.runs, err)
		}
		printResult(stdout, r)
		results = append(results, r)
	}
	if o.runs > 1 {
		printMedians(stdout, o.target, results)
	}
	if o.pacing {
		for _, r := range results {
			if r.Pacing != nil && !r.Pacing.OK() {
				return fmt.Errorf("%w: pacing", errGoalsMissed)
			}
		}
	}
	for _, r := range results {
		if r.Errors() > 0 {
			return fmt.Errorf("%w: %d errors", errGoalsMissed, r.Errors())
		}
	}
	return nil
}

// errGoalsMissed makes the exit status 1: the run worked, the bot did not
// meet the goals.
var errGoalsMissed = errors.New("goals missed")
