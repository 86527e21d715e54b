package daemon_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/daemon"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/model/modeltest"
)

// Tests of context compression and the conversation commands, through the
// web chat and a fake model on loopback: what the model is sent is judged on
// the requests the fake received.

// convModel is the fake model's script: a summarising request (recognised
// by its instructions) is answered "SUMMARY of msg-01,msg-02,…", naming
// the messages its transcript held; anything else "echo: <first word of the
// last user message>". summarise, if set, replaces the summarising answer
// (a slow or failing summariser).
type convModel struct {
	mu        sync.Mutex
	summarise func(ctx context.Context, transcript string) (model.Response, error)
}

var msgTag = regexp.MustCompile(`msg-\d+`)

func isSummaryRequest(req model.Request) bool {
	return len(req.Messages) == 2 && strings.HasPrefix(req.Messages[0].Content, "You compress chat histories")
}

func (cm *convModel) handle(ctx context.Context, req model.Request) (model.Response, error) {
	if isSummaryRequest(req) {
		cm.mu.Lock()
		f := cm.summarise
		cm.mu.Unlock()
		if f != nil {
			return f(ctx, req.Messages[1].Content)
		}
		tags := slices.Compact(msgTag.FindAllString(req.Messages[1].Content, -1)) // each user message and its echo
		return model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "SUMMARY of " + strings.Join(tags, ",")}}, nil
	}
	last := ""
	for _, m := range req.Messages {
		if m.Role == model.RoleUser {
			last = m.Content
		}
	}
	first, _, _ := strings.Cut(last, " ")
	// "tool" in a message makes it call a tool (one unknown to the daemon:
	// its result is an error, stored like any) before answering.
	if lm := req.Messages[len(req.Messages)-1]; lm.Role == model.RoleUser && strings.Contains(lm.Content, " tool ") {
		n := 0
		for _, m := range req.Messages {
			n += len(m.ToolCalls)
		}
		return model.Response{Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
			{ID: fmt.Sprintf("call_%s_%d_a", first, n), Name: "lookup", Arguments: `{"q":"` + first + `"}`},
			{ID: fmt.Sprintf("call_%s_%d_b", first, n), Name: "lookup", Arguments: `{"q":"more"}`},
		}}}, nil
	}
	return model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "echo: " + first}}, nil
}

func (cm *convModel) setSummarise(f func(ctx context.Context, transcript string) (model.Response, error)) {
	cm.mu.Lock()
	cm.summarise = f
	cm.mu.Unlock()
}

// convWorld is a daemon on a fresh home with the fake model and a small
// context window.
type convWorld struct {
	home  string
	fake  *modeltest.Server
	cm    *convModel
	extra map[string]string
	r     *running
}

func newConvWorld(t *testing.T, contextTokens int) *convWorld {
	t.Helper()
	w := &convWorld{home: t.TempDir(), cm: &convModel{}}
	w.fake = modeltest.NewServer(t, modeltest.WithHandler(w.cm.handle))
	w.extra = map[string]string{
		"OPENAI_BASE_URL":       w.fake.URL(),
		"HERMES_CONTEXT_TOKENS": fmt.Sprint(contextTokens),
		"HERMES_REVIEW_EVERY":   "0",
		"HERMES_SWEEP_EVERY":    "0",
	}
	w.start(t)
	return w
}

func (w *convWorld) start(t *testing.T) {
	t.Helper()
	w.r = start(t, testConfig(t, w.home, w.extra), daemon.Options{})
}

// say sends text to chat and returns the first reply's text.
func (w *convWorld) say(t *testing.T, chat, text string) string {
	t.Helper()
	code, a := w.r.chat(t, chat, text)
	if code != 200 || len(a.Replies) == 0 {
		t.Fatalf("%q: status %d, answer %+v", text, code, a)
	}
	return a.Replies[0].Text
}

// padded is a user message tagged msg-NN, about 150 tokens long.
func padded(n int) string {
	return fmt.Sprintf("msg-%02d %s", n, strings.Repeat("words to fill the context ", 23))
}

// summaryRequests counts the summarising requests the fake received.
func (w *convWorld) summaryRequests() int {
	n := 0
	for _, r := range w.fake.Requests() {
		if isSummaryRequest(r.Request) {
			n++
		}
	}
	return n
}

// lastChatRequest is the last request that was not a summarising one.
func (w *convWorld) lastChatRequest(t *testing.T) model.Request {
	t.Helper()
	reqs := w.fake.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if !isSummaryRequest(reqs[i].Request) {
			return reqs[i].Request
		}
	}
	t.Fatal("no chat request received")
	return model.Request{}
}

// waitStatus polls /status until it contains want.
func (w *convWorld) waitStatus(t *testing.T, chat, want string) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		st := w.say(t, chat, "/status")
		if strings.Contains(st, want) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("/status never showed %q; last: %s", want, st)
		}
		time.Sleep(20 * time.Millisecond) // polling a state with a deadline, not waiting for an event
	}
}

// tags lists the msg-NN tags of a request's user messages, in order, and
// the summary the system message ends with ("" if none).
func tags(req model.Request) (seen []string, summary string) {
	for i, m := range req.Messages {
		switch {
		case i == 0 && m.Role == model.RoleSystem:
			if _, after, ok := strings.Cut(m.Content, "[Summary of the earlier part of this conversation"); ok {
				summary = after
			}
		case m.Role == model.RoleSystem:
			summary = "a second system message: " + m.Content
		case m.Role == model.RoleUser:
			seen = append(seen, msgTag.FindString(m.Content))
		}
	}
	return seen, summary
}

func TestCompression_SummaryReplacesTheOldestAndNewestStayVerbatim(t *testing.T) {
	w := newConvWorld(t, 8000) // a budget of 6000 tokens: about 36 exchanges
	const chat = "comp"
	n := 0
	for w.summaryRequests() == 0 {
		n++
		if n > 80 {
			t.Fatal("no compression after 80 exchanges")
		}
		if got := w.say(t, chat, padded(n)); got != fmt.Sprintf("echo: msg-%02d", n) {
			t.Fatalf("reply %d = %q", n, got)
		}
	}
	w.waitStatus(t, chat, "with a summary of earlier messages")

	if got := w.say(t, chat, padded(n+1)); got != fmt.Sprintf("echo: msg-%02d", n+1) {
		t.Fatalf("reply after compression = %q", got)
	}
	seen, summary := tags(w.lastChatRequest(t))
	covered := msgTag.FindAllString(summary, -1)
	if !strings.Contains(summary, "SUMMARY of msg-01,") || len(covered) == 0 {
		t.Fatalf("the request has no summary of the oldest messages: %q", summary)
	}
	// The summary stands for msg-01…msg-k; the request then carries
	// msg-(k+1)…msg-(n+1), every one of them, in order, verbatim.
	k := len(covered)
	want := make([]string, 0, n+1-k)
	for i := k + 1; i <= n+1; i++ {
		want = append(want, fmt.Sprintf("msg-%02d", i))
	}
	if strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Fatalf("after a summary of %d messages the model saw users %v, want %v", k, seen, want)
	}
	for _, m := range w.lastChatRequest(t).Messages {
		if m.Role == model.RoleUser && !strings.HasSuffix(m.Content, strings.Repeat("words to fill the context ", 23)) {
			t.Fatalf("a kept message was not verbatim: %q", m.Content)
		}
	}
	t.Logf("%d exchanges; the summary stands for the first %d, the request carries %d verbatim", n+1, k, n+1-k)
	if k < 5 || n+1-k < 5 {
		t.Fatalf("summary covers %d of %d messages: want both old and new parts substantial", k, n+1)
	}

	// A restart keeps the summary and does not compress again. On a busy
	// machine the test may have sent several messages while the first
	// compression ran, and a second one may then follow the last reply:
	// what the restart must keep is whatever summary was stored when the
	// daemon stopped, and stop (which waits for background work) is when
	// every summarising request made before the restart has been made.
	w.r.stop()
	before := w.summaryRequests()
	w.start(t)
	if got := w.say(t, chat, padded(n+2)); got != fmt.Sprintf("echo: msg-%02d", n+2) {
		t.Fatalf("reply after restart = %q", got)
	}
	seen2, summary2 := tags(w.lastChatRequest(t))
	k2 := len(msgTag.FindAllString(summary2, -1))
	if before == 1 && summary2 != summary {
		t.Fatalf("after restart: summary %q, want the one from before it, %q", summary2, summary)
	}
	if !strings.Contains(summary2, "SUMMARY of msg-01,") || k2 < k || len(seen2) == 0 || seen2[0] != fmt.Sprintf("msg-%02d", k2+1) {
		t.Fatalf("after restart: summary of %d messages %q, users from %v; want the stored summary and the messages after it", k2, summary2, seen2)
	}
	if got := w.summaryRequests(); got != before {
		t.Fatalf("the restart compressed again: %d summarising requests, want %d", got, before)
	}
	// /status shows the context size against the budget.
	if st := w.say(t, chat, "/status"); !regexp.MustCompile(`Context: ~\d+ / 6000 tokens`).MatchString(st) {
		t.Fatalf("/status does not show the context size: %s", st)
	}
}

func TestCompression_SessionAnswersWhileASlowSummaryRunsAndAFailureKeepsHistory(t *testing.T) {
	w := newConvWorld(t, 100000)
	const chat = "slow"
	for i := 1; i <= 6; i++ {
		w.say(t, chat, padded(i))
	}
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	w.cm.setSummarise(func(ctx context.Context, _ string) (model.Response, error) {
		once.Do(func() { close(started) })
		select {
		case <-release:
		case <-ctx.Done():
			return model.Response{}, ctx.Err()
		}
		return model.Response{}, &model.APIError{Status: 500, Message: "summariser broke"}
	})
	done := make(chan string, 1)
	go func() {
		_, a := w.r.chat(t, chat, "/compress")
		if len(a.Replies) > 0 {
			done <- a.Replies[0].Text
		}
		close(done)
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the summarising request never arrived")
	}
	// The compression hangs; the conversation goes on meanwhile.
	answered := make(chan string, 1)
	go func() { answered <- w.say(t, chat, padded(7)) }()
	select {
	case got := <-answered:
		if got != "echo: msg-07" {
			t.Fatalf("reply during compression = %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not answer while compressing")
	}
	close(release)
	if got := <-done; !strings.Contains(got, "Could not compress") {
		t.Fatalf("/compress with a failing summariser answered %q", got)
	}
	// Nothing was lost: the model sees every message, and no summary.
	w.say(t, chat, padded(8))
	seen, summary := tags(w.lastChatRequest(t))
	if summary != "" || strings.Join(seen, " ") != "msg-01 msg-02 msg-03 msg-04 msg-05 msg-06 msg-07 msg-08" {
		t.Fatalf("after a failed compression the model saw %v (summary %q)", seen, summary)
	}

	// /compress with a working summariser keeps the last exchange only.
	w.cm.setSummarise(nil)
	if got := w.say(t, chat, "/compress"); !strings.Contains(got, "Compressed 14 earlier messages") {
		t.Fatalf("/compress = %q", got)
	}
	w.say(t, chat, padded(9))
	seen, summary = tags(w.lastChatRequest(t))
	if !strings.Contains(summary, "msg-01,msg-02,msg-03,msg-04,msg-05,msg-06,msg-07") || strings.Join(seen, " ") != "msg-08 msg-09" {
		t.Fatalf("after /compress: users %v, summary %q", seen, summary)
	}
}

func TestUndoAndRetry_ChangeWhatTheModelSees(t *testing.T) {
	w := newConvWorld(t, 100000)
	const chat = "undo"
	w.say(t, chat, "alpha one")
	w.say(t, chat, "beta two")
	if got := w.say(t, chat, "/undo"); !strings.Contains(got, "Removed the last exchange (2 messages)") {
		t.Fatalf("/undo = %q", got)
	}
	w.say(t, chat, "gamma three")
	if got := userTexts(w.lastChatRequest(t)); got != "alpha one|gamma three" {
		t.Fatalf("after /undo the model saw %q", got)
	}

	// /retry asks again without the answer it replaces; the reply answers
	// the /retry.
	var mu sync.Mutex
	answers := 0
	w.fake.SetHandler(func(_ context.Context, req model.Request) (model.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		answers++
		return model.Response{Message: model.Message{Role: model.RoleAssistant, Content: fmt.Sprintf("answer %d", answers)}}, nil
	})
	if got := w.say(t, chat, "delta four"); got != "answer 1" {
		t.Fatalf("reply = %q", got)
	}
	if got := w.say(t, chat, "/retry"); got != "answer 2" {
		t.Fatalf("/retry = %q", got)
	}
	req := w.lastChatRequest(t)
	if got := userTexts(req); got != "alpha one|gamma three|delta four" {
		t.Fatalf("/retry sent users %q", got)
	}
	for _, m := range req.Messages {
		if m.Content == "answer 1" {
			t.Fatal("/retry sent the answer it replaces")
		}
	}
	w.say(t, chat, "epsilon five")
	if got := assistantTexts(w.lastChatRequest(t)); !strings.HasSuffix(got, "|answer 2") || strings.Contains(got, "answer 1") {
		t.Fatalf("after /retry the history has answers %q", got)
	}

	// Both survive a restart.
	w.r.stop()
	w.start(t)
	w.say(t, chat, "zeta six")
	if got := userTexts(w.lastChatRequest(t)); got != "alpha one|gamma three|delta four|epsilon five|zeta six" {
		t.Fatalf("after restart the model saw %q", got)
	}
	// Another chat's /undo touches nothing here; with nothing of its own it
	// says so.
	if got := w.say(t, "other", "/undo"); got != "Nothing to undo." {
		t.Fatalf("/undo in an empty chat = %q", got)
	}
	w.say(t, chat, "eta seven")
	if got := userTexts(w.lastChatRequest(t)); got != "alpha one|gamma three|delta four|epsilon five|zeta six|eta seven" {
		t.Fatalf("another chat's /undo changed this one: %q", got)
	}
}

func userTexts(req model.Request) string      { return roleTexts(req, model.RoleUser) }
func assistantTexts(req model.Request) string { return roleTexts(req, model.RoleAssistant) }

func roleTexts(req model.Request, role string) string {
	var out []string
	for _, m := range req.Messages {
		if m.Role == role {
			out = append(out, m.Content)
		}
	}
	return strings.Join(out, "|")
}

func TestConversations_TitleSessionsResumeOnlyThisChat(t *testing.T) {
	w := newConvWorld(t, 100000)
	w.say(t, "alice", "apple secret")
	if got := w.say(t, "alice", "/title"); !strings.Contains(got, "no title") {
		t.Fatalf("/title before one is set = %q", got)
	}
	if got := w.say(t, "alice", "/title Fruit   talk"); got != "Title set: Fruit talk" {
		t.Fatalf("/title = %q", got)
	}
	w.say(t, "alice", "/new")
	w.say(t, "alice", "banana")
	w.say(t, "bob", "bob's first")
	w.say(t, "bob", "/new")

	list := w.say(t, "alice", "/sessions")
	if !regexp.MustCompile(`(?s)2\. \(untitled\) “banana” — .*, 2 messages ← current\n1\. Fruit talk — .*, 2 messages\n`).MatchString(list) {
		t.Fatalf("/sessions = %q", list)
	}
	if got := w.say(t, "alice", "/resume 1"); got != "↪️ Back in conversation 1 (Fruit talk): 2 messages in context." {
		t.Fatalf("/resume 1 = %q", got)
	}
	w.say(t, "alice", "cherry")
	if got := userTexts(w.lastChatRequest(t)); got != "apple secret|cherry" {
		t.Fatalf("after /resume 1 the model saw %q", got)
	}
	if got := w.say(t, "alice", "/title"); got != "Title: Fruit talk" {
		t.Fatalf("/title after /resume = %q", got)
	}
	// /new after going back starts a third conversation, not the second.
	w.say(t, "alice", "/new")
	w.say(t, "alice", "date")
	if got := userTexts(w.lastChatRequest(t)); got != "date" {
		t.Fatalf("after /new the model saw %q", got)
	}
	if list := w.say(t, "alice", "/sessions"); !strings.HasPrefix(list, "Conversations in this chat, newest first:\n3. ") {
		t.Fatalf("/sessions after /new = %q", list)
	}

	// Bob's numbers are his own: his conversation 1 is his, and alice's
	// conversation 3 does not exist for him.
	if got := w.say(t, "bob", "/resume 3"); !strings.Contains(got, "no conversation 3") {
		t.Fatalf("bob /resume 3 = %q", got)
	}
	if got := w.say(t, "bob", "/sessions"); strings.Contains(got, "Fruit") || !strings.Contains(got, "1. (untitled)") || strings.Contains(got, "2.") {
		t.Fatalf("bob's /sessions = %q", got)
	}
	w.say(t, "bob", "/resume 1")
	w.say(t, "bob", "bob again")
	if got := userTexts(w.lastChatRequest(t)); got != "bob's first|bob again" {
		t.Fatalf("bob's model saw %q", got)
	}
	for _, bad := range []string{"/resume", "/resume x", "/resume -1", "/resume 99999999999999999999"} {
		if got := w.say(t, "bob", bad); !strings.HasPrefix(got, "Usage: /resume") {
			t.Fatalf("%s = %q", bad, got)
		}
	}
	if got := w.say(t, "bob", "/title "+strings.Repeat("x", 101)); !strings.Contains(got, "at most 100") {
		t.Fatalf("a long title = %q", got)
	}
}

// TestCompression_FailingSummariserIsNotAskedEveryTurn: past the budget
// with a summariser that always fails, the chat goes on answering with the
// newest messages that fit, and the summariser is asked again only every
// few exchanges.
func TestCompression_FailingSummariserIsNotAskedEveryTurn(t *testing.T) {
	w := newConvWorld(t, 8000)
	w.cm.setSummarise(func(context.Context, string) (model.Response, error) {
		return model.Response{}, &model.APIError{Status: 400, Message: "summaries are broken"}
	})
	const chat = "failing"
	n := 0
	for w.summaryRequests() == 0 {
		n++
		if n > 80 {
			t.Fatal("no compression attempt after 80 exchanges")
		}
		w.say(t, chat, padded(n))
	}
	first := n
	for i := 1; i <= 9; i++ {
		n++
		if got := w.say(t, chat, padded(n)); got != fmt.Sprintf("echo: msg-%02d", n) {
			t.Fatalf("reply %d past the budget = %q", n, got)
		}
		seen, _ := tags(w.lastChatRequest(t))
		if seen[len(seen)-1] != fmt.Sprintf("msg-%02d", n) || seen[0] == "msg-01" {
			t.Fatalf("past the budget the model saw users %v", seen)
		}
	}
	// One attempt at the first exchange past the budget, then one every
	// three exchanges (six messages) counted from when the failure came
	// back: after nine more exchanges, two to four in all (as the failures
	// come back sooner or later), not ten.
	if got := w.summaryRequests(); got < 2 || got > 4 {
		t.Fatalf("%d summarising requests over 10 exchanges past the budget (from %d), want 2 to 4", got, first)
	}
}

// TestCompression_NoRequestPartsAToolCallFromItsResults: a conversation
// where every other exchange calls tools grows past a small budget and is
// compressed; in every request the fake received, each tool result follows
// the assistant message that called it, and every call has its results.
func TestCompression_NoRequestPartsAToolCallFromItsResults(t *testing.T) {
	w := newConvWorld(t, 8000)
	const chat = "tools"
	for n := 1; n <= 60; n++ {
		text := padded(n)
		if n%2 == 0 {
			text = fmt.Sprintf("msg-%02d tool %s", n, strings.Repeat("call it ", 60))
		}
		if got := w.say(t, chat, text); got != fmt.Sprintf("echo: msg-%02d", n) {
			t.Fatalf("reply %d = %q", n, got)
		}
	}
	w.waitStatus(t, chat, "with a summary of earlier messages")
	w.say(t, chat, padded(61))
	checked := 0
	for i, r := range w.fake.Requests() {
		if isSummaryRequest(r.Request) {
			continue
		}
		if err := toolPairsWhole(r.Request.Messages); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		checked++
	}
	if _, summary := tags(w.lastChatRequest(t)); summary == "" || w.summaryRequests() == 0 {
		t.Fatal("the conversation was never compressed")
	}
	t.Logf("%d requests checked, %d summarising", checked, w.summaryRequests())
}

// toolPairsWhole reports a tool result not preceded by its call in the same
// run, or a call whose results do not all follow it.
func toolPairsWhole(msgs []model.Message) error {
	var open map[string]bool
	for i, m := range msgs {
		switch {
		case m.Role == model.RoleTool:
			if !open[m.ToolCallID] {
				return fmt.Errorf("message %d: tool result %s without its call", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		case len(open) > 0:
			return fmt.Errorf("message %d: calls %v without their results", i, open)
		}
		if len(m.ToolCalls) > 0 {
			open = make(map[string]bool)
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		}
	}
	return nil
}
