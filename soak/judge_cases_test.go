package soak_test

import (
	"strings"
	"testing"
)

// TestJudge shows that each invariant of the soak can fail: the judge is
// given what the fakes would have recorded in each kind of failure.
func TestJudge(t *testing.T) {
	tg := &conversation{platform: telegram, chat: "5001", tokens: []string{"tok:tg:5001:1", "tok:tg:5001:2", "tok:tg:5001:3"}}
	dc := &conversation{platform: discord, chat: "3001", tokens: []string{"tok:dc:3001:1", "tok:dc:3001:2"}}
	convs := []*conversation{tg, dc}
	all := map[string]bool{}
	for _, c := range convs {
		for _, tok := range c.tokens {
			all[tok] = true
		}
	}
	clean := []answer{
		{telegram, "5001", "ack tok:tg:5001:1"},
		{discord, "3001", "ack tok:dc:3001:1 tok:dc:3001:2"}, // an interrupt merged them
		{telegram, "5001", "ack tok:tg:5001:2 tok:tg:5001:3"},
	}
	cases := []struct {
		name     string
		answers  []answer
		accepted map[string]bool
		kills    int
		want     string // a substring of the failure; "" = passes
		check    func(t *testing.T, v verdict)
	}{
		{name: "Clean", answers: clean, accepted: all, want: "",
			check: func(t *testing.T, v verdict) {
				if v.sent != 5 || v.accepted != 5 || v.answered != 5 {
					t.Errorf("sent %d accepted %d answered %d, want 5 5 5", v.sent, v.accepted, v.answered)
				}
			}},
		{name: "TelegramLost", answers: clean[:2], accepted: all, want: "2 accepted messages never answered:\n\ttok:tg:5001:2\n\ttok:tg:5001:3"},
		{name: "DiscordStoredLost", answers: []answer{clean[0], clean[2]}, accepted: all, want: "2 accepted messages never answered"},
		{name: "DiscordNeverStoredIsCounted", answers: append(clean[:1:1], clean[2]),
			accepted: map[string]bool{"tok:tg:5001:1": true}, want: "",
			check: func(t *testing.T, v verdict) {
				if len(v.notAccepted) != 2 || v.accepted != 3 {
					t.Errorf("notAccepted %v, accepted %d; want both Discord tokens not accepted, 3 accepted", v.notAccepted, v.accepted)
				}
			}},
		{name: "AnsweredButNotStored", answers: clean, accepted: map[string]bool{}, want: "2 answers to messages hermesd never stored"},
		{name: "Misrouted", answers: append(clean[:3:3], answer{telegram, "5002", "ack tok:tg:5001:3"}), accepted: all,
			want: "misrouted answers:\n\ttok:tg:5001:3 (sent in telegram chat 5001) answered in telegram chat 5002"},
		{name: "MisroutedAcrossPlatforms", answers: []answer{clean[0], {discord, "5001", "ack tok:dc:3001:1 tok:dc:3001:2"}, clean[2]},
			accepted: all, want: "2 misrouted answers"},
		{name: "TelegramDuplicateWithinBudget", answers: append(clean[:3:3], clean[0]), accepted: all, kills: 1, want: "",
			check: func(t *testing.T, v verdict) {
				if v.duplicates[telegram] != 1 {
					t.Errorf("telegram duplicates %d, want 1", v.duplicates[telegram])
				}
			}},
		{name: "TelegramDuplicatesBeyondKills", answers: append(clean[:3:3], clean[0], clean[2]), accepted: all, kills: 1,
			want: "2 Telegram answers sent twice, more than one per kill (1 kills)"},
		{name: "DiscordDuplicate", answers: append(clean[:3:3], clean[1]), accepted: all, kills: 5,
			want: "1 Discord answers posted twice"},
		{name: "Reanswered", answers: append(clean[:3:3], answer{telegram, "5001", "ack tok:tg:5001:1 again"}), accepted: all,
			want: "1 messages answered twice by different answers"},
		{name: "OutOfOrder", answers: []answer{{telegram, "5001", "ack tok:tg:5001:2"}, {telegram, "5001", "ack tok:tg:5001:1 tok:tg:5001:3"}, clean[1]},
			accepted: all, want: "1 messages answered out of order:\n\ttok:tg:5001:2 was first answered before tok:tg:5001:1"},
		{name: "Stray", answers: append(clean[:3:3], answer{discord, "3001", "Sorry, something went wrong."}), accepted: all,
			want: "1 answers that name no message"},
		{name: "Unknown", answers: append(clean[:3:3], answer{discord, "3001", "ack tok:dc:3001:9"}), accepted: all,
			want: "1 answers naming messages nobody sent"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := judge(convs, c.answers, c.accepted)
			got := strings.Join(v.failures(c.kills), "\n")
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
