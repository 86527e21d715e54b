package main

import (
	"testing"
	"time"
)

func TestMarker_RoundTripsAndIgnoresLookalikes(t *testing.T) {
	cases := []struct {
		n         string
		text      string
		conv, seq int
		ok        bool
	}{
		{"plain", "ok " + formatMarker(12, 3), 12, 3, true},
		{"last wins", formatMarker(1, 1) + " then " + formatMarker(1, 2), 1, 2, true},
		{"malformed after a good one", formatMarker(7, 9) + " {load:x:1} {load:2:}", 7, 9, true},
		{"none", "ok", 0, 0, false},
		{"no seq", "{load:5}", 0, 0, false},
	}
	for _, c := range cases {
		t.Run(c.n, func(t *testing.T) {
			conv, seq, ok := parseMarker(c.text)
			if conv != c.conv || seq != c.seq || ok != c.ok {
				t.Errorf("parseMarker(%q) = %d, %d, %v; want %d, %d, %v", c.text, conv, seq, ok, c.conv, c.seq, c.ok)
			}
		})
	}
}

func TestLedger_CountsWhatWentWrong(t *testing.T) {
	t0 := time.Now()
	convs := []*conv{{id: 0, chatID: 1, limit: 2}, {id: 1, chatID: 2, limit: 2}}
	l := newLedger(convs, true)
	l.injected(convs[0], t0)
	l.injected(convs[1], t0)
	at := t0.Add(10 * time.Millisecond)
	if c := l.match(reply{chat: "2", text: "ok " + formatMarker(0, 1), at: at, ok: true}); c != nil || l.misrouted != 1 {
		t.Errorf("conversation 0's reply in chat 2: matched %v, misrouted %d", c, l.misrouted)
	}
	if c := l.match(reply{chat: "1", text: "ok " + formatMarker(0, 1), at: at, ok: true}); c != convs[0] {
		t.Errorf("the right reply matched %v", c)
	}
	if c := l.match(reply{chat: "1", text: "ok " + formatMarker(0, 1), at: at, ok: true}); c != nil || l.duplicates != 1 || l.unexpected != 0 {
		t.Errorf("a duplicate: matched %v, duplicates %d, unexpected %d", c, l.duplicates, l.unexpected)
	}
	if c := l.match(reply{chat: "1", text: "ok " + formatMarker(0, 5), at: at, ok: true}); c != nil || l.unexpected != 1 {
		t.Errorf("an answer to a message never sent: matched %v, unexpected %d", c, l.unexpected)
	}
	l.match(reply{chat: "1", text: notePrefix + "saved", at: at, ok: true})
	l.match(reply{chat: "3", text: "hi", at: at, ok: true})
	l.match(reply{chat: "2", text: "x", at: at, ok: false})
	if l.notes != 1 || l.unexpected != 2 || l.duplicates != 1 || l.failed != 1 || l.missing() != 1 || len(l.latencies) != 1 {
		t.Errorf("notes %d unexpected %d failed %d missing %d answered %d", l.notes, l.unexpected, l.failed, l.missing(), len(l.latencies))
	}
}

func TestCheckPacing_FindsExcessAndReach(t *testing.T) {
	t0 := time.Now()
	var sends []send
	for i := range 10 { // one private chat at exactly 1/s
		sends = append(sends, send{chat: "1", at: t0.Add(time.Duration(i) * time.Second)})
	}
	for i := range 30 { // 30 chats in one second, on a 30/s grid
		sends = append(sends, send{chat: string(rune('a' + i)), at: t0.Add(20*time.Second + time.Duration(i)*(time.Second/30))})
	}
	v := checkPacing(sends, 25*time.Millisecond)
	if v.ChatViolations != 0 || v.ChatBest != 10 || v.GlobalMax != 30 || v.GlobalStrict != 30 || !v.OK() {
		t.Errorf("within the limits and reaching them: %+v", v)
	}
	sends = append(sends, send{chat: "1", at: t0.Add(9*time.Second + 500*time.Millisecond)}, send{chat: "z", at: t0.Add(20*time.Second + 500*time.Millisecond)})
	v = checkPacing(sends, 25*time.Millisecond)
	if v.ChatViolations != 2 || v.GlobalMax != 31 || v.OK() {
		t.Errorf("two gaps under a second and 31 in a second: %+v", v)
	}
	var group []send
	for i := range 21 { // 21 in a minute in one group: one too many
		group = append(group, send{chat: "-5", group: true, at: t0.Add(time.Duration(i) * 2 * time.Second)})
	}
	group = append(group, send{chat: "-5", group: true, at: t0.Add(70 * time.Second)})
	if v := checkPacing(group, 0); v.GroupMax != 21 || v.OK() {
		t.Errorf("21 messages in a minute in a group: %+v", v)
	}
}

func TestPercentile_NearestRank(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	if p50, p99 := percentile(d, 50), percentile(d, 99); p50 != 50 || p99 != 99 {
		t.Errorf("p50 %d p99 %d", p50, p99)
	}
	if got := percentile(d[:1], 99); got != 1 {
		t.Errorf("one sample: %d", got)
	}
}

func TestLedger_FailoverOfTheKilledMembersSessions(t *testing.T) {
	t0 := time.Now()
	// Conversations 0 and 1 were on the killed member, 2 elsewhere.
	convs := []*conv{{id: 0, chatID: 10, limit: 3}, {id: 1, chatID: 11, limit: 3}, {id: 2, chatID: 12, limit: 3}}
	l := newLedger(convs, true)
	l.track = true
	answer := func(c *conv, seq int, at time.Time) {
		if got := l.match(reply{chat: c.chat, text: "ok " + formatMarker(c.id, seq), at: at, ok: true}); got != c {
			t.Fatalf("answer %d of conversation %d not matched", seq, c.id)
		}
	}
	for _, c := range convs {
		l.injected(c, t0)
	}
	answer(convs[0], 1, t0.Add(10*time.Millisecond)) // before the kill: not a failover
	l.injected(convs[0], t0.Add(3*time.Second))      // sent after the kill
	kill := t0.Add(time.Second)
	l.kill = &killed{member: 1, at: kill, sessions: []string{"telegram:dm:10", "telegram:dm:11"}}
	answer(convs[1], 1, kill.Add(2500*time.Millisecond))            // waiting at the kill: 2.5 s
	answer(convs[0], 2, t0.Add(3*time.Second+500*time.Millisecond)) // from its message: 0.5 s
	answer(convs[2], 1, kill.Add(100*time.Millisecond))             // not moved
	if got := l.match(reply{chat: "11", text: "ok " + formatMarker(1, 1), at: kill.Add(3 * time.Second), ok: true}); got != nil {
		t.Fatal("a duplicate matched")
	}
	f := l.failover()
	if f.Member != 1 || f.Sessions != 2 || f.Answered != 2 || f.Waiting != 1 {
		t.Errorf("failover %+v: want member 1, 2 sessions, 2 answered, 1 waiting at the kill", f)
	}
	if f.P50 != 500*time.Millisecond || f.Max != 2500*time.Millisecond {
		t.Errorf("p50 %v max %v, want 500ms and 2.5s", f.P50, f.Max)
	}
	if l.duplicates != 1 {
		t.Errorf("duplicates %d, want 1", l.duplicates)
	}
}

func TestPauseOf_SpreadsConversationsApart(t *testing.T) {
	seen := map[time.Duration]bool{}
	for id := range 10 {
		p := pauseOf(&conv{id: id}, time.Second)
		if p < time.Second/2 || p > 3*time.Second/2 {
			t.Errorf("conversation %d pauses %v, want 0.5–1.5 s", id, p)
		}
		seen[p] = true
	}
	if len(seen) != 5 {
		t.Errorf("%d distinct pauses over 10 conversations, want 5", len(seen))
	}
}
