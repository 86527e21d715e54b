package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// options are the command line. The child-only fields tell a child process
// where the fakes of its parent listen.
type options struct {
	platform       string // "telegram" or "discord"
	target         string // "hermesd" or "echo"
	compare        bool
	runs           int
	chats          int // private chats (Telegram) or DM channels (Discord)
	groups         int // Telegram supergroups
	groupUsers     int // conversations (users) per group
	burst          int // extra one-message private chats injected at the start
	messages       int // per conversation
	duration       time.Duration
	timeout        time.Duration
	settle         time.Duration
	connect        time.Duration
	pacing         bool
	slack          time.Duration
	model          string // "marker" or "instant"
	inProcess      bool
	cpuProfile     string
	driverProf     string
	logLevel       string
	store          string        // "sqlite" or "postgres"
	pgDurable      bool          // PostgreSQL with fsync and synchronous commit on
	members        int           // hermesd processes; > 1 is a cluster over PostgreSQL
	ingress        string        // Telegram: "poll" or "webhook"
	killAfter      time.Duration // kill -9 the busiest member this long into the load (0: never)
	pause          time.Duration // a user's pause between an answer and the next message
	leaseTTL       time.Duration // HERMES_CLUSTER_LEASE_TTL (0: hermesd's default)
	requestTimeout time.Duration // HERMES_CLUSTER_REQUEST_TIMEOUT (0: hermesd's default)

	child    bool
	apiURL   string
	token    string
	modelURL string
	env      envFlag // -child: hermesd settings on top of the driver's (-set K=V)
}

// Pacing-mode defaults: 20 private chats fast enough to hit 1 msg/s each, two
// groups of five users that hit 20/min, and a burst of 100 one-message chats
// at the start that hits 30/s; 70 s so that a whole minute of a group fits.
const (
	pacingChats      = 20
	pacingGroups     = 2
	pacingGroupUsers = 5
	pacingBurst      = 100
	pacingMessages   = 100
	pacingDuration   = 70 * time.Second
)

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("hermesd-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.platform, "platform", "telegram", "fake platform: telegram or discord")
	fs.StringVar(&o.target, "target", "hermesd", "bot under load: hermesd or echo (the trivial baseline)")
	fs.BoolVar(&o.compare, "compare", false, "run echo, then hermesd, each in its own process, and print the ratios against the goals")
	fs.IntVar(&o.runs, "runs", 1, "repeat the run (or the comparison) this many times and print medians")
	fs.IntVar(&o.chats, "chats", 1000, "private chats (Telegram) or DM channels (Discord), one conversation each")
	fs.IntVar(&o.groups, "groups", 0, "Telegram supergroups (messages mention the bot)")
	fs.IntVar(&o.groupUsers, "group-users", 5, "users talking in each group, one conversation each")
	fs.IntVar(&o.burst, "burst", 0, "extra private chats that send one message at the start")
	fs.IntVar(&o.messages, "messages", 10, "messages per conversation, each sent when the previous one is answered")
	fs.DurationVar(&o.duration, "duration", time.Minute, "stop sending new messages after this long")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long to wait for the last replies after -duration")
	fs.DurationVar(&o.connect, "connect-timeout", 30*time.Second, "how long the bot may take to start polling or open the gateway")
	fs.DurationVar(&o.settle, "settle", 300*time.Millisecond, "after the last reply, how long to watch for extra (duplicate) replies")
	pacing := fs.String("pacing", "off", "Telegram pacing in hermesd (TELEGRAM_RATE_LIMIT): on checks the documented limits")
	fs.DurationVar(&o.slack, "pacing-slack", 25*time.Millisecond, "transit jitter forgiven when checking the limits from the fake's arrival times")
	fs.StringVar(&o.model, "model", "marker", "fake model: marker (instant, copies the message's marker into its answer) or instant (modeltest.Instant: always \"ok\", replies matched by chat)")
	fs.BoolVar(&o.inProcess, "inprocess", false, "run the bot in this process (no separate RSS or CPU figures; for tests)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write the bot process's CPU profile to this file (hermesd-load -compare writes <file>.echo and <file>.hermesd)")
	fs.StringVar(&o.driverProf, "driver-cpuprofile", "", "write this process's CPU profile (driver, fakes, model) to this file")
	fs.StringVar(&o.logLevel, "log-level", "info", "hermesd's HERMES_LOG_LEVEL; its log goes to a file in the temporary HERMES_HOME")
	fs.StringVar(&o.store, "store", "sqlite", "hermesd's store: sqlite (a file in a temporary HERMES_HOME) or postgres (a throwaway server started with store/pgtest, a fresh database)")
	fs.BoolVar(&o.pgDurable, "pg-durable", false, "with -store postgres: fsync and synchronous commit on, as in production (off by default, as in the tests: SQLite's synchronous=NORMAL does not flush each commit either)")
	fs.IntVar(&o.members, "members", 1, "hermesd processes; more than 1 runs a cluster (HERMES_CLUSTER=on) over PostgreSQL, Telegram webhooks behind a round-robin balancer")
	fs.StringVar(&o.ingress, "ingress", "", "Telegram ingress: poll (getUpdates) or webhook (through the driver's round-robin balancer); default poll for one member, webhook for a cluster")
	fs.DurationVar(&o.killAfter, "kill-after", 0, "with -members > 1: this long into the load, kill -9 the member holding the most sessions and report the failover")
	fs.DurationVar(&o.leaseTTL, "lease-ttl", 0, "with -members > 1: HERMES_CLUSTER_LEASE_TTL, how long a dead member's sessions stay fenced (0: hermesd's default)")
	fs.DurationVar(&o.requestTimeout, "request-timeout", 0, "with -members > 1: HERMES_CLUSTER_REQUEST_TIMEOUT (0: hermesd's default)")
	fs.DurationVar(&o.pause, "pause", 0, "a user's pause between an answer and the next message, from half of it to 1.5 times it by conversation (0: at once)")
	fs.BoolVar(&o.child, "child", false, "internal: run only the bot, against the fakes of the parent process")
	fs.StringVar(&o.apiURL, "api-url", "", "internal (-child): the fake platform's base URL")
	fs.StringVar(&o.token, "token", "", "internal (-child): the bot token the fake accepts")
	fs.StringVar(&o.modelURL, "model-url", "", "internal (-child): the fake model's base URL (…/v1)")
	fs.Var(&o.env, "set", "internal (-child): a hermesd setting K=V on top of the driver's (repeatable)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q (see -h)", fs.Args())
	}
	switch *pacing {
	case "on":
		o.pacing = true
	case "off":
	default:
		return o, fmt.Errorf("-pacing: want on or off, got %q", *pacing)
	}
	if o.members > 1 && !o.child {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["store"] {
			o.store = "postgres"
		}
	}
	if o.ingress == "" {
		o.ingress = "poll"
		if o.members > 1 {
			o.ingress = "webhook"
		}
	}
	if o.pacing && !o.child {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		defaults := []struct {
			name string
			p    *int
			v    int
		}{{"chats", &o.chats, pacingChats}, {"groups", &o.groups, pacingGroups}, {"group-users", &o.groupUsers, pacingGroupUsers},
			{"burst", &o.burst, pacingBurst}, {"messages", &o.messages, pacingMessages}}
		for _, d := range defaults {
			if !set[d.name] {
				*d.p = d.v
			}
		}
		if !set["duration"] {
			o.duration = pacingDuration
		}
	}
	return o, o.validate()
}

func (o options) validate() error {
	var errs []error
	oneOf := func(name, v string, allowed ...string) {
		for _, a := range allowed {
			if v == a {
				return
			}
		}
		errs = append(errs, fmt.Errorf("-%s: want one of %v, got %q", name, allowed, v))
	}
	oneOf("platform", o.platform, "telegram", "discord")
	oneOf("target", o.target, "hermesd", "echo")
	oneOf("model", o.model, "marker", "instant")
	oneOf("log-level", o.logLevel, "debug", "info", "warn", "error")
	oneOf("store", o.store, "sqlite", "postgres")
	oneOf("ingress", o.ingress, "poll", "webhook")
	if o.child {
		if o.apiURL == "" || o.token == "" || o.modelURL == "" {
			errs = append(errs, errors.New("-child needs -api-url, -token and -model-url"))
		}
		return errors.Join(errs...)
	}
	if o.chats < 0 || o.groups < 0 || o.groupUsers < 1 || o.burst < 0 || o.messages < 1 || o.runs < 1 {
		errs = append(errs, errors.New("-chats, -groups and -burst must be ≥ 0; -group-users, -messages and -runs ≥ 1"))
	}
	if o.chats+o.groups*o.groupUsers+o.burst == 0 {
		errs = append(errs, errors.New("no conversations: set -chats, -groups or -burst"))
	}
	if o.duration <= 0 || o.timeout <= 0 || o.connect <= 0 || o.settle < 0 || o.slack < 0 {
		errs = append(errs, errors.New("-duration, -timeout and -connect-timeout must be positive, -settle and -pacing-slack not negative"))
	}
	if o.groupUsers > groupUsersStride {
		errs = append(errs, fmt.Errorf("-group-users: at most %d", groupUsersStride))
	}
	if o.platform == "discord" && (o.groups > 0 || o.pacing) {
		errs = append(errs, errors.New("-platform discord drives DM channels only: -groups and -pacing on are Telegram checks"))
	}
	if o.members < 1 {
		errs = append(errs, errors.New("-members must be ≥ 1"))
	}
	if o.members > 1 && o.store != "postgres" {
		errs = append(errs, errors.New("-members > 1: the members share one PostgreSQL database; drop -store sqlite"))
	}
	if o.members > 1 && o.ingress != "webhook" {
		errs = append(errs, errors.New("-members > 1 takes Telegram updates through webhooks on every member: drop -ingress poll"))
	}
	if o.members > 1 && o.platform == "discord" {
		// The gateway is a singleton one member holds; the fake has no
		// handover of a gateway session to a new member, so the driver could
		// not tell a cluster's cost from the fake's.
		errs = append(errs, errors.New("-platform discord runs one member only: a cluster's Discord gateway is held by one elected member, which this driver does not measure; use -platform telegram"))
	}
	if o.platform == "discord" && o.ingress == "webhook" {
		errs = append(errs, errors.New("-ingress webhook is Telegram's"))
	}
	if o.members > 1 && (o.inProcess || o.compare || o.target != "hermesd") {
		errs = append(errs, errors.New("-members > 1 runs hermesd members in their own processes: drop -inprocess, -compare and -target echo"))
	}
	if o.members > 1 && o.pacing {
		errs = append(errs, errors.New("-pacing on checks one process's pacing: run it with -members 1"))
	}
	if o.killAfter < 0 || o.pause < 0 || o.leaseTTL < 0 || o.requestTimeout < 0 {
		errs = append(errs, errors.New("-kill-after, -pause, -lease-ttl and -request-timeout must not be negative"))
	}
	if o.killAfter > 0 && o.members < 2 {
		errs = append(errs, errors.New("-kill-after needs -members > 1: someone must take the killed member's sessions"))
	}
	if o.killAfter > 0 && o.killAfter >= o.duration {
		errs = append(errs, errors.New("-kill-after must fall within -duration"))
	}
	if o.pgDurable && o.store != "postgres" {
		errs = append(errs, errors.New("-pg-durable is PostgreSQL's: add -store postgres"))
	}
	if o.target == "echo" && (o.store != "sqlite" || o.ingress != "poll") {
		errs = append(errs, errors.New("the echo bot has no store and polls: -store and -ingress are hermesd's"))
	}
	if o.compare && o.inProcess {
		errs = append(errs, errors.New("-compare runs each bot in its own process; drop -inprocess"))
	}
	return errors.Join(errs...)
}

const usage = `hermesd-load drives a bot through a fake Telegram or Discord and an instant
fake model on 127.0.0.1 and prints messages/s, p50/p99 latency from the
user's message to the bot's reply, errors and the bot's peak RSS.

Examples:
  hermesd-load -platform telegram -target hermesd -chats 1000 -messages 10
  hermesd-load -compare -platform telegram -chats 1000 -messages 10 -runs 3
  hermesd-load -platform telegram -target hermesd -pacing on
  hermesd-load -platform discord -compare -chats 500
  hermesd-load -target hermesd -cpuprofile hermesd.pprof
  hermesd-load -store postgres -ingress webhook -chats 100 -messages 10
  hermesd-load -members 3 -chats 100 -messages 10
  hermesd-load -members 3 -chats 100 -messages 10 -pause 1s -kill-after 4s

Exit status: 0 all goals met, 1 a goal missed (errors, pacing, ratios), 2 the
run itself failed.

Flags:
`

// envFlag collects -set K=V.
type envFlag map[string]string

func (e *envFlag) String() string { return fmt.Sprint(map[string]string(*e)) }

func (e *envFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want K=V, got %q", s)
	}
	if *e == nil {
		*e = envFlag{}
	}
	(*e)[k] = v
	return nil
}
