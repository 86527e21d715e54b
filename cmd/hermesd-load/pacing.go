package main

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// Telegram's documented sending limits
// (core.telegram.org/bots/faq#my-bot-is-hitting-limits-how-do-i-avoid-this),
// as the pacing check counts them.
const (
	chatLimit    = 1 // messages per chatWindow in one chat
	chatWindow   = time.Second
	groupLimit   = 20 // messages per groupWindow in one group
	groupWindow  = time.Minute
	globalLimit  = 30 // messages per globalWindow across all chats
	globalWindow = time.Second
	// reachedShare is how close to a limit counts as reaching it.
	reachedShare = 0.9
	// chatReachWindow: reaching 1 msg/s in a chat means about 10 in 10 s.
	chatReachWindow = 10 * time.Second
)

// pacingVerdict is what the fake's arrival times say about the limits.
// "Never exceeded" counts in windows shortened by Slack (the jitter between
// the bot's send slot and the fake's arrival time); "reached" counts in full
// windows. The strict counts are printed beside the shortened ones.
type pacingVerdict struct {
	Slack time.Duration

	ChatMinGap     time.Duration // shortest gap between two messages in one chat
	ChatViolations int           // gaps shorter than chatWindow-Slack
	ChatBest       int           // most messages to one private chat in chatReachWindow

	Groups       int
	GroupMax     int           // most messages to one group in groupWindow-Slack
	GroupStrict  int           // the same in a full groupWindow
	GroupLongest time.Duration // longest span of one group's messages

	GlobalMax    int // most messages overall in globalWindow-Slack
	GlobalStrict int // the same in a full globalWindow
	Messages     int
}

// checkPacing counts sends per chat, per group and overall in sliding windows.
func checkPacing(sends []send, slack time.Duration) *pacingVerdict {
	v := &pacingVerdict{Slack: slack, Messages: len(sends), ChatMinGap: -1}
	byChat := map[string][]time.Time{}
	group := map[string]bool{}
	var all []time.Time
	for _, s := range sends {
		byChat[s.chat] = append(byChat[s.chat], s.at)
		group[s.chat] = s.group
		all = append(all, s.at)
	}
	for chat, ts := range byChat {
		slices.SortFunc(ts, time.Time.Compare)
		for i := 1; i < len(ts); i++ {
			gap := ts[i].Sub(ts[i-1])
			if v.ChatMinGap < 0 || gap < v.ChatMinGap {
				v.ChatMinGap = gap
			}
			if gap < chatWindow-slack {
				v.ChatViolations++
			}
		}
		if !group[chat] {
			v.ChatBest = max(v.ChatBest, maxInWindow(ts, chatReachWindow))
			continue
		}
		v.Groups++
		v.GroupMax = max(v.GroupMax, maxInWindow(ts, groupWindow-slack))
		v.GroupStrict = max(v.GroupStrict, maxInWindow(ts, groupWindow))
		if len(ts) > 0 {
			v.GroupLongest = max(v.GroupLongest, ts[len(ts)-1].Sub(ts[0]))
		}
	}
	slices.SortFunc(all, time.Time.Compare)
	v.GlobalMax = maxInWindow(all, globalWindow-slack)
	v.GlobalStrict = maxInWindow(all, globalWindow)
	return v
}

// maxInWindow is the most of the sorted times in any window [t, t+w).
func maxInWindow(ts []time.Time, w time.Duration) int {
	best, j := 0, 0
	for i := range ts {
		for j < len(ts) && ts[j].Sub(ts[i]) < w {
			j++
		}
		best = max(best, j-i)
	}
	return best
}

// reached reports whether n is close enough to limit.
func reached(n, limit int) bool { return float64(n) >= reachedShare*float64(limit) }

// groupObservable: reaching 20/min can only be seen in a minute of traffic.
func (v *pacingVerdict) groupObservable() bool { return v.Groups > 0 && v.GroupLongest >= groupWindow }

// OK reports whether no limit was exceeded and each observable one was reached.
func (v *pacingVerdict) OK() bool {
	exceeded := v.ChatViolations > 0 || v.GroupMax > groupLimit || v.GlobalMax > globalLimit
	missed := !reached(v.ChatBest, int(chatReachWindow/chatWindow)*chatLimit) || !reached(v.GlobalStrict, globalLimit) ||
		v.groupObservable() && !reached(v.GroupStrict, groupLimit)
	return !exceeded && !missed
}

func (v *pacingVerdict) print(w io.Writer) {
	verdict := func(exceeded, reachedOK, observable bool) string {
		switch {
		case exceeded:
			return "EXCEEDED"
		case !observable:
			return "never exceeded; reaching it needs a minute of traffic"
		case !reachedOK:
			return "never exceeded, NOT reached"
		}
		return "never exceeded, reached"
	}
	fmt.Fprintf(w, "  pacing       %d messages; windows shortened by %v of transit slack\n", v.Messages, v.Slack)
	perChat := int(chatReachWindow/chatWindow) * chatLimit
	gap := "none"
	if v.ChatMinGap >= 0 {
		gap = v.ChatMinGap.Round(time.Millisecond).String()
	}
	fmt.Fprintf(w, "    1/s per chat   shortest gap %s, %d gaps under %v; busiest chat %d in %v (limit %d): %s\n",
		gap, v.ChatViolations, chatWindow-v.Slack, v.ChatBest, chatReachWindow, perChat,
		verdict(v.ChatViolations > 0, reached(v.ChatBest, perChat), true))
	if v.Groups > 0 {
		fmt.Fprintf(w, "    20/min per group  busiest group %d in a minute (%d strict), %d groups observed up to %v: %s\n",
			v.GroupMax, v.GroupStrict, v.Groups, v.GroupLongest.Round(time.Second),
			verdict(v.GroupMax > groupLimit, reached(v.GroupStrict, groupLimit), v.groupObservable()))
	} else {
		fmt.Fprintf(w, "    20/min per group  no groups in this run (-groups)\n")
	}
	fmt.Fprintf(w, "    30/s overall   busiest second %d (%d strict): %s\n", v.GlobalMax, v.GlobalStrict,
		verdict(v.GlobalMax > globalLimit, reached(v.GlobalStrict, globalLimit), true))
	ok := "PASS"
	if !v.OK() {
		ok = "FAIL"
	}
	fmt.Fprintf(w, "    verdict        %s\n", ok)
}
