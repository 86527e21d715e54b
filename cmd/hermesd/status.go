package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// statusBody is the part of GET /api/status that `hermesd status` prints.
type statusBody struct {
	Started       time.Time `json:"started"`
	UptimeSeconds float64   `json:"uptime_seconds"`
	ActorsTotal   int64     `json:"actors_total"`
	Actors        []struct {
		Kind    string `json:"kind"`
		Live    int64  `json:"live"`
		Mailbox int64  `json:"mailbox"`
	} `json:"actors"`
	SessionsLive int64 `json:"sessions_live"`
	TurnsRunning int64 `json:"turns_running"`
	Platforms    []struct {
		Platform      string `json:"platform"`
		ReportsHealth bool   `json:"reports_health"`
		Connected     bool   `json:"connected"`
		Standby       bool   `json:"standby"`
		LastError     string `json:"last_error"`
	} `json:"platforms"`
	IdentityRefusals uint64 `json:"identity_refusals"`
	RecentErrors     []struct {
		Time    time.Time         `json:"time"`
		Level   string            `json:"level"`
		Message string            `json:"message"`
		Attrs   map[string]string `json:"attrs"`
	} `json:"recent_errors"`
	Goroutines int `json:"goroutines"`
}

const statusUsage = `Usage: hermesd status [-errors n]

Prints a running daemon's summary: uptime, live actors by kind, sessions,
running turns, the platforms' health and recent warnings and errors. It asks
the daemon on HERMES_HTTP_ADDR (with HERMES_API_TOKEN if set).

Examples:
  hermesd status
  hermesd status -errors 0     # no recent errors
`

// status prints a running daemon's summary from GET /api/status.
func status(ctx context.Context, args []string, w io.Writer, env func(string) (string, bool)) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() { fmt.Fprint(fs.Output(), statusUsage) }
	nErrors := fs.Int("errors", 10, "how many recent warnings and errors to show")
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("status takes no arguments, got %q", fs.Args())}
	}
	var st statusBody
	if err := apiGet(ctx, env, "/api/status", &st); err != nil {
		return err
	}

	fmt.Fprintf(w, "hermesd is up %s (since %s)\n", age(st.UptimeSeconds), st.Started.Local().Format("2006-01-02 15:04:05"))
	fmt.Fprintf(w, "%d sessions live · %d turns running · %d actors · %d identity refusals · %d goroutines\n\n",
		st.SessionsLive, st.TurnsRunning, st.ActorsTotal, st.IdentityRefusals, st.Goroutines)

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tLIVE\tQUEUED")
	for _, k := range st.Actors {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", k.Kind, k.Live, k.Mailbox)
	}
	tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLATFORM\tSTATE\tLAST ERROR")
	for _, p := range st.Platforms {
		state := "running"
		if p.ReportsHealth {
			state = "connected"
			switch {
			case p.Standby:
				state = "standby"
			case !p.Connected:
				state = "DISCONNECTED"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Platform, state, orDash(oneLine(p.LastError)))
	}
	if len(st.Platforms) == 0 {
		fmt.Fprintln(tw, "(none)\t\t")
	}
	tw.Flush()
	if err := printCluster(ctx, env, w, 20); err != nil {
		return err
	}

	if *nErrors <= 0 {
		return nil
	}
	fmt.Fprintln(w)
	if len(st.RecentErrors) == 0 {
		fmt.Fprintln(w, "No recent warnings or errors.")
		return nil
	}
	fmt.Fprintln(w, "Recent warnings and errors, newest first:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tLEVEL\tMESSAGE\tDETAILS")
	for i, e := range st.RecentErrors {
		if i == *nErrors {
			break
		}
		keys := make([]string, 0, len(e.Attrs))
		for k := range e.Attrs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		details := make([]string, 0, len(keys))
		for _, k := range keys {
			details = append(details, k+"="+oneLine(e.Attrs[k]))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Time.Local().Format("15:04:05"), e.Level, oneLine(e.Message), strings.Join(details, " "))
	}
	return tw.Flush()
}

// actorNode is an actor as GET /api/actors shows it.
type actorNode struct {
	ID         string       `json:"id"`
	Kind       string       `json:"kind"`
	Session    string       `json:"session"`
	Parent     string       `json:"parent"`
	State      string       `json:"state"`
	Mailbox    int64        `json:"mailbox"`
	AgeSeconds float64      `json:"age_seconds"`
	Busy       bool         `json:"busy"`
	Children   []*actorNode `json:"children"`
}

type actorPage struct {
	Total  int          `json:"total"`
	Offset int          `json:"offset"`
	Actors []*actorNode `json:"actors"`
}

const treeUsage = `Usage: hermesd tree [-search text] [-limit n] [-offset n] [session key]

Prints a running daemon's live actor tree: the shared actors (router,
outboxes, TTS, scheduler) and the sessions under the router, each with its
running turn and the turn's tool calls. With a session key, only that
session's subtree. Sessions are listed by key, a page at a time.

Examples:
  hermesd tree
  hermesd tree -search telegram:dm:
  hermesd tree telegram:dm:12345
`

// tree prints the live actor tree from GET /api/actors.
func tree(ctx context.Context, args []string, w io.Writer, env func(string) (string, bool)) error {
	fs := flag.NewFlagSet("tree", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() { fmt.Fprint(fs.Output(), treeUsage) }
	search := fs.String("search", "", "only sessions whose key contains this")
	limit := fs.Int("limit", 50, "how many sessions to show")
	offset := fs.Int("offset", 0, "how many sessions to skip")
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	if fs.NArg() > 1 {
		return usageError{"tree takes at most one session key"}
	}
	if *limit < 1 || *offset < 0 {
		return usageError{"-limit must be at least 1 and -offset not negative"}
	}
	if fs.NArg() == 1 {
		return sessionTree(ctx, w, env, fs.Arg(0))
	}

	var shared, sessions actorPage
	if err := apiGet(ctx, env, "/api/actors?shared=1&limit=5000", &shared); err != nil {
		return err
	}
	q := url.Values{"kind": {"session"}, "subtree": {"1"}, "limit": {fmt.Sprint(*limit)}, "offset": {fmt.Sprint(*offset)}}
	if *search != "" {
		q.Set("search", *search)
	}
	if err := apiGet(ctx, env, "/api/actors?"+q.Encode(), &sessions); err != nil {
		return err
	}
	// Nest the shared actors by parent, and the sessions under theirs (the
	// router).
	byID := make(map[string]*actorNode, len(shared.Actors))
	for _, a := range shared.Actors {
		byID[a.ID] = a
	}
	var roots []*actorNode
	for _, a := range shared.Actors {
		if p := byID[a.Parent]; p != nil {
			p.Children = append(p.Children, a)
		} else {
			roots = append(roots, a)
		}
	}
	for _, s := range sessions.Actors {
		if p := byID[s.Parent]; p != nil {
			p.Children = append(p.Children, s)
		} else {
			roots = append(roots, s)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACTOR\tKIND\tSTATE\tQUEUED\tAGE")
	for _, r := range roots {
		printNode(tw, r, "", "")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch {
	case sessions.Total == 0 && *search != "":
		fmt.Fprintf(w, "\nNo live session matches %q.\n", *search)
	case sessions.Total == 0:
		fmt.Fprintln(w, "\nNo live sessions.")
	default:
		fmt.Fprintf(w, "\nSessions %d–%d of %d", sessions.Offset+1, sessions.Offset+len(sessions.Actors), sessions.Total)
		if sessions.Offset+len(sessions.Actors) < sessions.Total {
			fmt.Fprintf(w, " (next page: -offset %d)", sessions.Offset+len(sessions.Actors))
		}
		fmt.Fprintln(w, ".")
	}
	return nil
}

// sessionTree prints one session's subtree.
func sessionTree(ctx context.Context, w io.Writer, env func(string) (string, bool), key string) error {
	var page actorPage
	if err := apiGet(ctx, env, "/api/actors?limit=5000&session="+url.QueryEscape(key), &page); err != nil {
		return err
	}
	if page.Total == 0 {
		return errors.New("no live session " + key + " (an idle session passivates; `hermesd sessions` lists the live ones)")
	}
	byID := make(map[string]*actorNode, len(page.Actors))
	for _, a := range page.Actors {
		byID[a.ID] = a
	}
	var roots []*actorNode
	for _, a := range page.Actors { // sorted by id: parents first
		if p := byID[a.Parent]; p != nil {
			p.Children = append(p.Children, a)
		} else {
			roots = append(roots, a)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACTOR\tKIND\tSTATE\tQUEUED\tAGE")
	for _, r := range roots {
		printNode(tw, r, "", "")
	}
	return tw.Flush()
}

// printNode prints n and its children as a tree: first is n's own
// connector, rest the indentation its children continue from.
func printNode(w io.Writer, n *actorNode, first, rest string) {
	name := n.ID[strings.LastIndexByte(n.ID, '/')+1:]
	state := n.State
	if n.Kind == "session" {
		name = n.Session
		if n.Busy {
			state += ", busy"
		} else {
			state += ", idle"
		}
	}
	fmt.Fprintf(w, "%s%s\t%s\t%s\t%d\t%s\n", first, name, n.Kind, state, n.Mailbox, age(n.AgeSeconds))
	for i, c := range n.Children {
		if i == len(n.Children)-1 {
			printNode(w, c, rest+"└─ ", rest+"   ")
		} else {
			printNode(w, c, rest+"├─ ", rest+"│  ")
		}
	}
}

// age renders seconds as a short duration: 42s, 3m05s, 2h07m, 3d04h.
func age(seconds float64) string {
	d := time.Duration(seconds * float64(time.Second))
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps a log value on one table row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
