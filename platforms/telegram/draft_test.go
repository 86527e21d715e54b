package telegram_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms/telegram"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

// paced is setup with Telegram's rate limits on, as in production.
func paced(t *testing.T, srv *telegramtest.Server, st *store) *telegram.Adapter {
	t.Helper()
	return setup(t, srv, func(c *telegram.Config, d *telegram.Deps) {
		c.RateLimit = true
		if st != nil {
			d.Store = st
		}
	})
}

func group(chat int64, user string) messages.Session {
	return messages.MustSession(messages.Telegram, messages.Group, strconv.FormatInt(chat, 10), "", user)
}

func draft(id string, v uint64, text string) *messages.Draft {
	return &messages.Draft{Id: id, Version: v, Text: text, ReplyToId: "7"}
}

func final(id, text string) *messages.Delivery {
	return &messages.Delivery{Kind: messages.DeliveryKind_DELIVERY_KIND_TEXT, Text: text, DraftId: id, Last: true, ReplyToId: "7"}
}

// stream shows the drafts one after another, as the outbox does.
func stream(t *testing.T, a *telegram.Adapter, s messages.Session, ds ...*messages.Draft) {
	t.Helper()
	for _, d := range ds {
		if err := a.Draft(ctxT(t), s, d); err != nil {
			t.Fatalf("Draft %q: %v", d.GetText(), err)
		}
	}
}

// gapsAtLeast fails unless consecutive calls arrived at least min apart.
func gapsAtLeast(t *testing.T, calls []telegramtest.Call, min time.Duration) {
	t.Helper()
	for i := 1; i < len(calls); i++ {
		if gap := calls[i].Time.Sub(calls[i-1].Time); gap < min {
			t.Fatalf("%s and %s %v apart, want at least %v", calls[i-1].Method, calls[i].Method, gap, min)
		}
	}
}

func failed(srv *telegramtest.Server) []telegramtest.Call {
	var out []telegramtest.Call
	for _, c := range srv.Calls() {
		if !c.OK() && !strings.EqualFold(c.Method, "getUpdates") {
			out = append(out, c)
		}
	}
	return out
}

// TestDraft_PrivateChatStreamsPreviewsThenOneMessage: a private chat sees
// sendMessageDraft previews at most one a second, unchanged text skipped,
// then exactly one message with the whole formatted answer.
func TestDraft_PrivateChatStreamsPreviewsThenOneMessage(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := paced(t, srv, nil)
	s := dm(42)
	stream(t, a, s, draft("d1", 1, "The answer"), draft("d1", 2, "The answer is **4**"),
		draft("d1", 3, "The answer is 4"), // same visible text: skipped
		draft("d1", 4, "The answer is **42**"))
	if _, err := a.Send(ctxT(t), s, final("d1", "The answer is **42**.")); err != nil {
		t.Fatal(err)
	}
	if got, want := srv.Drafts(42), []string{"The answer", "The answer is 4", "The answer is 42"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("drafts %q, want %q", got, want)
	}
	for _, c := range srv.CallsTo("sendMessageDraft") {
		if c.Fields["draft_id"] != srv.CallsTo("sendMessageDraft")[0].Fields["draft_id"] {
			t.Fatal("one reply's drafts carry different draft_ids")
		}
	}
	sent := srv.SentTo(42)
	if len(sent) != 1 || sent[0].Fields["parse_mode"] != "HTML" || sent[0].Fields["text"] != "The answer is <b>42</b>." {
		t.Fatalf("final messages: %+v, want one HTML message", sent)
	}
	if n := len(srv.CallsTo("editMessageText")); n != 0 {
		t.Fatalf("%d edits in a private chat that takes drafts", n)
	}
	var calls []telegramtest.Call
	for _, c := range srv.Calls() {
		if c.ChatID == 42 {
			calls = append(calls, c)
		}
	}
	gapsAtLeast(t, calls, 900*time.Millisecond)
	if f := failed(srv); len(f) != 0 {
		t.Fatalf("failed calls: %+v", f)
	}
}

// TestDraft_GroupGrowsOneMessageByEdits: in a group the first draft is a
// message, later drafts edit it at most once a second, no edit repeats the
// text, and the final reply is that message edited into the formatted text.
func TestDraft_GroupGrowsOneMessageByEdits(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := paced(t, srv, nil)
	s := group(-100, "5")
	stream(t, a, s, draft("d1", 1, "Step one"), draft("d1", 2, "Step one, step two"), draft("d1", 3, "Step one, step two"),
		&messages.Draft{Id: "d1", Version: 4, Text: "Step one, step two", Tool: "web_search"})
	rec, err := a.Send(ctxT(t), s, final("d1", "Step one, step **two**, done."))
	if err != nil {
		t.Fatal(err)
	}
	sent := srv.SentTo(-100)
	if len(sent) != 1 || len(rec.MessageIds) != 1 || rec.MessageIds[0] != strconv.Itoa(sent[0].MessageID) {
		t.Fatalf("sent %d messages (receipt %v), want the draft message only", len(sent), rec.MessageIds)
	}
	if sent[0].Fields["reply_parameters"] == "" {
		t.Error("the draft message does not reply to the user's message")
	}
	edits := srv.CallsTo("editMessageText")
	var texts []string
	for _, e := range edits {
		texts = append(texts, e.Fields["text"])
	}
	want := []string{"Step one, step two", "Step one, step two\n\n⚙️ running web_search…", "Step one, step <b>two</b>, done."}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Fatalf("edits %q, want %q", texts, want)
	}
	if got := srv.Visible(-100); len(got) != 1 || got[0] != "Step one, step two, done." {
		t.Fatalf("the chat shows %q", got)
	}
	gapsAtLeast(t, append([]telegramtest.Call{sent[0]}, edits...), 900*time.Millisecond)
	if f := failed(srv); len(f) != 0 {
		t.Fatalf("failed calls (a no-op edit?): %+v", f)
	}
}

// TestDraft_FloodControlWaitsAndSendsTheFinalOnce: a 429 on a draft edit is
// not retried; the chat holds its drafts for retry_after, and the final reply
// waits it out and lands once, in the draft message.
func TestDraft_FloodControlWaitsAndSendsTheFinalOnce(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := paced(t, srv, nil)
	s := group(-200, "5")
	stream(t, a, s, draft("d1", 1, "Hello"))
	srv.FailNextInChat("editMessageText", -200, 1, telegramtest.TooManyRequests(3))
	stream(t, a, s, draft("d1", 2, "Hello there"), draft("d1", 3, "Hello there, friend"), draft("d1", 4, "Hello there, friend!"))
	if _, err := a.Send(ctxT(t), s, final("d1", "Hello there, friend! How are you?")); err != nil {
		t.Fatal(err)
	}
	edits := srv.CallsTo("editMessageText")
	if len(edits) != 2 || edits[0].Faulted == "" || !edits[1].OK() {
		t.Fatalf("edits %+v, want the refused draft then the final", edits)
	}
	if wait := edits[1].Time.Sub(edits[0].Time); wait < 3*time.Second-100*time.Millisecond {
		t.Fatalf("the final went %v after a 429 asking for 3 s", wait)
	}
	if got := srv.Visible(-200); len(got) != 1 || got[0] != "Hello there, friend! How are you?" {
		t.Fatalf("the chat shows %q, want one copy of the answer", got)
	}

	// A 429 on the final edit itself: waited out, sent once.
	s2 := group(-201, "5")
	stream(t, a, s2, draft("d2", 1, "Partial"))
	srv.FailNextInChat("editMessageText", -201, 2, telegramtest.TooManyRequests(1))
	if _, err := a.Send(ctxT(t), s2, final("d2", "Partial, then whole.")); err != nil {
		t.Fatal(err)
	}
	if got := srv.Visible(-201); len(got) != 1 || got[0] != "Partial, then whole." {
		t.Fatalf("the chat shows %q, want one copy of the answer", got)
	}
}

// TestDraft_LongAnswerEditsTheFirstChunkAndSendsTheRest: the draft message
// becomes the first 4096 units; the rest follow as messages.
func TestDraft_LongAnswerEditsTheFirstChunkAndSendsTheRest(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	s := group(-300, "5")
	answer := longAnswer()
	stream(t, a, s, draft("d1", 1, answer[:5000])) // a draft longer than a message shows its first
	if n := utf16Units(srv.Visible(-300)[0]); n > telegram.TextLimit || n < 3000 {
		t.Fatalf("draft of %d units", n)
	}
	rec, err := a.Send(ctxT(t), s, final("d1", answer))
	if err != nil {
		t.Fatal(err)
	}
	got := srv.Visible(-300)
	if len(got) != 3 || len(rec.MessageIds) != 3 || rec.MessageIds[0] != strconv.Itoa(srv.SentTo(-300)[0].MessageID) {
		t.Fatalf("%d messages (receipt %v), want the draft plus 2", len(got), rec.MessageIds)
	}
	if strings.Join(strings.Fields(strings.Join(got, " ")), " ") != strings.Join(strings.Fields(answer), " ") {
		t.Fatal("the messages, in order, do not hold the whole answer once")
	}
}

// TestDraft_CancelledDraftIsDeleted: a stopped reply leaves nothing behind.
func TestDraft_CancelledDraftIsDeleted(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	s := group(-400, "5")
	stream(t, a, s, draft("d1", 1, "Half an ans"), &messages.Draft{Id: "d1", Version: 2, Cancelled: true})
	if got := srv.Visible(-400); len(got) != 0 {
		t.Fatalf("the chat still shows %q", got)
	}
	// The next reply is a new message, not an edit of the deleted one.
	if _, err := a.Send(ctxT(t), s, text("Stopped.")); err != nil {
		t.Fatal(err)
	}
	if got := srv.Visible(-400); len(got) != 1 || got[0] != "Stopped." {
		t.Fatalf("the chat shows %q", got)
	}
}

// TestDraft_ResendAfterCrashEditsTheSameMessage: the draft message's id is
// in the store; a final reply resent by a restarted process (once, then
// again) edits it instead of adding a copy, and a re-run turn's first draft
// adopts an open draft message.
func TestDraft_ResendAfterCrashEditsTheSameMessage(t *testing.T) {
	srv := telegramtest.NewServer(t)
	st := newStore()
	before := setup(t, srv, func(_ *telegram.Config, d *telegram.Deps) { d.Store = st })
	s := group(-500, "5")
	stream(t, before, s, draft("d1", 1, "Before the crash"))

	after := setup(t, srv, func(_ *telegram.Config, d *telegram.Deps) { d.Store = st.restarted() })
	for range 2 { // the resend, then a second resend (MarkDelivered lost again)
		if _, err := after.Send(ctxT(t), s, final("d1", "The whole answer.")); err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.Visible(-500); len(got) != 1 || got[0] != "The whole answer." {
		t.Fatalf("the chat shows %q, want one copy", got)
	}

	// A turn cut off by a crash is re-run with a new draft id: its first
	// draft takes over the message left open.
	stream(t, after, s, draft("d2", 1, "Run one"))
	again := setup(t, srv, func(_ *telegram.Config, d *telegram.Deps) { d.Store = st.restarted() })
	stream(t, again, s, draft("d3", 1, "Run two"))
	if _, err := again.Send(ctxT(t), s, final("d3", "Run two, whole.")); err != nil {
		t.Fatal(err)
	}
	if got := srv.Visible(-500); len(got) != 2 || got[1] != "Run two, whole." {
		t.Fatalf("the chat shows %q, want the first answer and one copy of the second", got)
	}
}

// TestDraft_RefusedPreviewsFallBackToEdits: where Telegram refuses
// sendMessageDraft, the private chat's answer grows by edits instead.
func TestDraft_RefusedPreviewsFallBackToEdits(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	srv.FailNext("sendMessageDraft", 1, telegramtest.BadRequest("Bad Request: method is available only to bots with forum topic mode enabled"))
	s := dm(43)
	stream(t, a, s, draft("d1", 1, "Hi"), draft("d1", 2, "Hi there"))
	if _, err := a.Send(ctxT(t), s, final("d1", "Hi there, _you_.")); err != nil {
		t.Fatal(err)
	}
	if got := srv.Visible(43); len(got) != 1 || got[0] != "Hi there, you." {
		t.Fatalf("the chat shows %q", got)
	}
	if n := len(srv.CallsTo("sendMessageDraft")); n != 1 {
		t.Fatalf("%d sendMessageDraft calls, want the one refused", n)
	}
}

// TestDraft_TwoSessionsInOneGroupKeepTheirOwnDrafts: two users' sessions
// in one group stream at once; each final lands in its own draft message,
// and neither sees the other's text in its message.
func TestDraft_TwoSessionsInOneGroupKeepTheirOwnDrafts(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	ann, bob := group(-600, "1"), group(-600, "2")
	stream(t, a, ann, draft("a", 1, "for ann"))
	stream(t, a, bob, draft("b", 1, "for bob"))
	stream(t, a, ann, draft("a", 2, "for ann, more"))
	if _, err := a.Send(ctxT(t), bob, final("b", "bob's answer")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Send(ctxT(t), ann, final("a", "ann's answer")); err != nil {
		t.Fatal(err)
	}
	if got := srv.Visible(-600); len(got) != 2 || got[0] != "ann's answer" || got[1] != "bob's answer" {
		t.Fatalf("the group shows %q", got)
	}
	// A draft for a session of another platform is refused.
	if err := a.Draft(ctxT(t), messages.MustSession(messages.Discord, messages.DM, "9", "", ""), draft("x", 1, "x")); err == nil {
		t.Fatal("a Discord session's draft was accepted")
	}
}
