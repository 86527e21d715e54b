package soak_test

import (
	"strings"
	"testing"
	"time"
)

// TestJudge shows that each invariant of the soak can fail: the judge is
// given what the fakes would have recorded in each kind of failure.
func TestJudge(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	// Three processes; the first two were killed.
	starts := []time.Time{t0, t0.Add(10 * time.Second), t0.Add(20 * time.Second)}
	// in returns a moment in the life of process p (from 0).
	in := func(p, ms int) time.Time { return starts[p].Add(time.Duration(ms) * time.Millisecond) }

	tg := &conversation{platform: telegram, chat: "5001", tokens: []string{"tok:tg:5001:1", "tok:tg:5001:2", "tok:tg:5001:3"}}
	dc := &conversation{platform: discord, chat: "3001", tokens: []string{"tok:dc:3001:1", "tok:dc:3001:2"}}
	convs := []*conversation{tg, dc}
	all := map[string]bool{}
	for _, c := range convs {
		for _, tok := range c.tokens {
			all[tok] = true
		}
	}
	tg1 := answer{telegram, "5001", "ack tok:tg:5001:1", in(0, 100)}
	dc12 := answer{discord, "3001", "ack tok:dc:3001:1 tok:dc:3001:2", in(0, 200)} // an interrupt merged them
	tg23 := answer{telegram, "5001", "ack tok:tg:5001:2 tok:tg:5001:3", in(1, 100)}
	clean := []answer{tg1, dc12, tg23}
	again := func(a answer, p int) answer { a.at = in(p, 500); return a }
	with := func(extra ...answer) []answer { return append(clean[:len(clean):len(clean)], extra...) }

	cases := []struct {
		name     string
		answers  []answer
		accepted map[string]bool
		want     string // a substring of the failures; "" = passes
		check    func(t *testing.T, v verdict)
	}{
		{name: "Clean", answers: clean, accepted: all, want: "",
			check: func(t *testing.T, v verdict) {
				if v.sent != 5 || v.accepted != 5 || v.answered != 5 {
					t.Errorf("sent %d accepted %d answered %d, want 5 5 5", v.sent, v.accepted, v.answered)
				}
			}},
		{name: "TelegramLost", answers: []answer{tg1, dc12}, accepted: all,
			want: "2 accepted messages never answered:\n\ttok:tg:5001:2\n\ttok:tg:5001:3"},
		{name: "DiscordStoredLost", answers: []answer{tg1, tg23}, accepted: all, want: "2 accepted messages never answered"},
		{name: "DiscordNeverStoredIsCounted", answers: []answer{tg1, tg23},
			accepted: map[string]bool{"tok:tg:5001:1": true}, want: "",
			check: func(t *testing.T, v verdict) {
				if len(v.notAccepted) != 2 || v.accepted != 3 {
					t.Errorf("notAccepted %v, accepted %d; want both Discord tokens not accepted, 3 accepted", v.notAccepted, v.accepted)
				}
			}},
		{name: "AnsweredButNotStored", answers: clean, accepted: map[string]bool{}, want: "2 answers to messages hermesd never stored"},
		{name: "Misrouted", answers: with(answer{telegram, "5002", "ack tok:tg:5001:3", in(2, 0)}), accepted: all,
			want: "misrouted answers:\n\ttok:tg:5001:3 (sent in telegram chat 5001) answered in telegram chat 5002"},
		{name: "MisroutedAcrossPlatforms", answers: []answer{tg1, {discord, "5001", "ack tok:dc:3001:1 tok:dc:3001:2", in(0, 300)}, tg23},
			accepted: all, want: "2 misrouted answers"},
		{name: "TelegramWindowDuplicate", answers: with(again(tg1, 1), again(tg23, 2)), accepted: all, want: "",
			check: func(t *testing.T, v verdict) {
				if v.duplicates[telegram] != 2 {
					t.Errorf("telegram duplicates %d, want 2", v.duplicates[telegram])
				}
			}},
		{name: "TelegramResendKilledAgain", answers: with(again(tg1, 1), again(tg1, 2)), accepted: all, want: ""},
		{name: "TelegramDuplicateFromOneProcess", answers: with(again(tg1, 0)), accepted: all,
			want: `chat 5001 got "ack tok:tg:5001:1" twice from one process (#1)`},
		{name: "TelegramDuplicateOfTheLastProcess", answers: []answer{tg1, dc12, again(tg23, 2), again(tg23, 2)}, accepted: all,
			want: "sent before by a process that was not killed"},
		{name: "TelegramTwoRepeatsAfterOneKill", answers: []answer{tg1, dc12, {telegram, "5001", tg23.text, in(0, 300)}, again(tg1, 1), again(tg23, 1)},
			accepted: all, want: "a second repeated reply sent by process #1"},
		{name: "DiscordDuplicate", answers: with(again(dc12, 1)), accepted: all, want: "1 Discord answers posted twice"},
		{name: "Reanswered", answers: with(answer{telegram, "5001", "ack tok:tg:5001:1 again", in(2, 0)}), accepted: all,
			want: "1 messages answered twice by different answers"},
		{name: "OutOfOrder", answers: []answer{{telegram, "5001", "ack tok:tg:5001:2", in(0, 0)}, {telegram, "5001", "ack tok:tg:5001:1 tok:tg:5001:3", in(0, 1)}, dc12},
			accepted: all, want: "1 messages answered out of order:\n\ttok:tg:5001:2 was first answered before tok:tg:5001:1"},
		{name: "Stray", answers: with(answer{discord, "3001", "Sorry, something went wrong.", in(2, 0)}), accepted: all,
			want: "1 answers that name no message"},
		{name: "Unknown", answers: with(answer{discord, "3001", "ack tok:dc:3001:9", in(2, 0)}), accepted: all,
			want: "1 answers naming messages nobody sent"},
		// A Telegram group draft created 200 ms before a kill, its answer
		// sent as a new message by the next process: the named window.
		{name: "TelegramDraftLeftByAKill", answers: []answer{{telegram, "5001", "ack", in(0, 9800)}, again(tg1, 1), dc12, tg23},
			accepted: all, want: "",
			check: func(t *testing.T, v verdict) {
				if len(v.leftDrafts) != 1 {
					t.Errorf("drafts left behind %v, want one", v.leftDrafts)
				}
			}},
		// The same far from any kill is not the window.
		{name: "TelegramDraftLeftWithoutAKill", answers: []answer{{telegram, "5001", "ack", in(0, 100)}, tg1, dc12, tg23},
			accepted: all, want: "1 answers that name no message:\n\ttelegram chat 5001 got \"ack\""},
		// Discord finds a draft by its nonce: one left behind is a failure.
		{name: "DiscordDraftLeftByAKill", answers: []answer{tg1, {discord, "3001", "ack", in(0, 9800)}, again(dc12, 1), tg23},
			accepted: all, want: "1 answers that name no message"},
		// A reply the killed process wrote just before the kill, read by the
		// fake just after the next process started, then resent by it.
		{name: "TelegramRepeatReadLate", answers: with(answer{telegram, "5001", tg23.text, in(1, 100)}), accepted: all, want: "",
			check: func(t *testing.T, v verdict) {
				if v.duplicates[telegram] != 1 {
					t.Errorf("telegram duplicates %d, want 1", v.duplicates[telegram])
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := judge(convs, c.answers, c.accepted, starts)
			got := strings.Join(v.failures(), "\n")
			switch {
			case c.want == "" && got != "":
				t.Errorf("failures:\n%s\nwant none", got)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Errorf("failures:\n%s\nwant one containing %q", got, c.want)
			}
			if c.check != nil {
				c.check(t, v)
			}
		})
	}
}
