package discord_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms/discord"
	"github.com/hermesd/hermesd/platforms/discord/discordtest"
)

// cursors is an in-memory DraftStore whose contents outlive an adapter, as
// the store outlives a crashed process.
type cursors struct {
	mu sync.Mutex
	m  map[string]string
}

func (c *cursors) Cursor(_ context.Context, name string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[name], nil
}

func (c *cursors) SetCursor(_ context.Context, name, value string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]string{}
	}
	c.m[name] = value
	return nil
}

func drafter(t *testing.T, srv *discordtest.Server, store discord.DraftStore) *discord.Adapter {
	t.Helper()
	a, err := discord.New(discord.Config{Token: "Bot " + discordtest.Token, APIURL: srv.URL},
		discord.Deps{Gate: allowAllBut(), Log: testLog(), Drafts: store})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func guildSession(channel, user string) messages.Session {
	return messages.MustSession(messages.Discord, messages.Group, channel, "", user)
}

func dDraft(id string, v uint64, text string) *messages.Draft {
	return &messages.Draft{Id: id, Version: v, Text: text, ReplyToId: "555"}
}

func dFinal(id, text string) *messages.Delivery {
	return &messages.Delivery{Kind: messages.DeliveryKind_DELIVERY_KIND_TEXT, Text: text, DraftId: id, Last: true, ReplyToId: "555"}
}

func showDrafts(t *testing.T, a *discord.Adapter, s messages.Session, ds ...*messages.Draft) {
	t.Helper()
	for _, d := range ds {
		if err := a.Draft(context.Background(), s, d); err != nil {
			t.Fatalf("Draft %q: %v", d.GetText(), err)
		}
	}
}

// TestDraft_OneMessageEditedThenFinal: the first draft is a message that
// replies to the user's, later drafts edit it at most once a second with no
// edit that changes nothing, and the final reply is that message edited.
func TestDraft_OneMessageEditedThenFinal(t *testing.T) {
	srv := discordtest.NewServer(t)
	a := drafter(t, srv, nil)
	s := guildSession("700", "1")
	showDrafts(t, a, s, dDraft("d1", 1, "Thinking about"), dDraft("d1", 2, "Thinking about it"), dDraft("d1", 3, "Thinking about it"),
		&messages.Draft{Id: "d1", Version: 4, Text: "Thinking about it", Tool: "web_search"})
	rec, err := a.Send(context.Background(), s, dFinal("d1", "Thought about it: **yes**."))
	if err != nil {
		t.Fatal(err)
	}
	posts := srv.Attempts()
	if len(posts) != 4 || posts[0].Method != http.MethodPost || posts[0].Reference == nil || posts[0].Reference.MessageID != "555" {
		t.Fatalf("requests %+v, want a reply post then 3 edits", posts)
	}
	var edits []string
	for _, p := range posts[1:] {
		if p.Method != http.MethodPatch || p.MessageID != posts[0].MessageID || p.Status != http.StatusOK {
			t.Fatalf("request %+v is not an edit of the draft", p)
		}
		edits = append(edits, p.Content)
	}
	want := []string{"Thinking about it", "Thinking about it\n\n⚙️ running web_search…", "Thought about it: **yes**."}
	if strings.Join(edits, "|") != strings.Join(want, "|") {
		t.Fatalf("edits %q, want %q", edits, want)
	}
	for i := 1; i < 3; i++ { // the drafts; the final goes when it is ready
		if gap := posts[i].At.Sub(posts[i-1].At); gap < discord.DraftInterval-50*time.Millisecond {
			t.Fatalf("drafts %v apart, want at least %v", gap, discord.DraftInterval)
		}
	}
	if got := srv.Visible("700"); len(got) != 1 || got[0] != "Thought about it: **yes**." || len(rec.MessageIds) != 1 || rec.MessageIds[0] != posts[0].MessageID {
		t.Fatalf("the channel shows %q (receipt %v)", got, rec.MessageIds)
	}
}

// TestDraft_429HoldsDraftsAndTheFinalLandsOnce: a rate-limited draft edit
// is not retried; later drafts wait out retry_after, and the final reply is
// edited in once, after it.
func TestDraft_429HoldsDraftsAndTheFinalLandsOnce(t *testing.T) {
	srv := discordtest.NewServer(t)
	a := drafter(t, srv, nil)
	s := guildSession("701", "1")
	showDrafts(t, a, s, dDraft("d1", 1, "One"))
	srv.FailEdits("701", 1, discordtest.RateLimited(2*time.Second))
	if err := a.Draft(context.Background(), s, dDraft("d1", 2, "One two")); err == nil {
		t.Fatal("a rate-limited draft reported success")
	}
	showDrafts(t, a, s, dDraft("d1", 3, "One two three")) // held: skipped
	if _, err := a.Send(context.Background(), s, dFinal("d1", "One two three four.")); err != nil {
		t.Fatal(err)
	}
	edits := srv.Edits("701")
	if len(edits) != 2 || edits[0].Status != http.StatusTooManyRequests || edits[1].Status != http.StatusOK || edits[1].Content != "One two three four." {
		t.Fatalf("edits %+v, want the refused draft and the final", edits)
	}
	if wait := edits[1].At.Sub(edits[0].At); wait < 2*time.Second-100*time.Millisecond {
		t.Fatalf("final edit %v after a 429 asking for 2 s", wait)
	}
	if got := srv.Visible("701"); len(got) != 1 || got[0] != "One two three four." {
		t.Fatalf("the channel shows %q, want one copy", got)
	}

	// A 429 on the final edit is retried after retry_after: still one copy.
	s2 := guildSession("702", "1")
	showDrafts(t, a, s2, dDraft("d2", 1, "Part"))
	srv.FailEdits("702", 1, discordtest.RateLimited(300*time.Millisecond))
	if _, err := a.Send(context.Background(), s2, dFinal("d2", "Part and whole.")); err != nil {
		t.Fatal(err)
	}
	if got := srv.Visible("702"); len(got) != 1 || got[0] != "Part and whole." {
		t.Fatalf("the channel shows %q, want one copy", got)
	}
}

// TestDraft_LongAnswerStillSplitsAt2000: the draft becomes the first chunk,
// the rest are posted.
func TestDraft_LongAnswerStillSplitsAt2000(t *testing.T) {
	srv := discordtest.NewServer(t)
	a := drafter(t, srv, nil)
	s := guildSession("703", "1")
	answer := strings.Repeat("word ", 1000) // 5000 characters
	showDrafts(t, a, s, dDraft("d1", 1, answer[:3000]))
	if got := srv.Visible("703"); len(got) != 1 || len([]rune(got[0])) > discord.TextLimit {
		t.Fatalf("draft: %d messages", len(got))
	}
	rec, err := a.Send(context.Background(), s, dFinal("d1", answer))
	if err != nil {
		t.Fatal(err)
	}
	got := srv.Visible("703")
	if len(got) != 3 || len(rec.MessageIds) != 3 {
		t.Fatalf("%d messages (receipt %v), want 3", len(got), rec.MessageIds)
	}
	for _, m := range got {
		if len([]rune(m)) > discord.TextLimit {
			t.Fatalf("a message of %d characters", len([]rune(m)))
		}
	}
	if strings.Join(strings.Fields(strings.Join(got, " ")), " ") != strings.TrimSpace(answer) {
		t.Fatal("the messages do not hold the answer once, in order")
	}
}

// TestDraft_CancelledDraftIsDeleted: /stop leaves no half answer behind.
func TestDraft_CancelledDraftIsDeleted(t *testing.T) {
	srv := discordtest.NewServer(t)
	a := drafter(t, srv, nil)
	s := dmSession("704")
	showDrafts(t, a, s, dDraft("d1", 1, "Half"), &messages.Draft{Id: "d1", Version: 2, Cancelled: true})
	if got := srv.Visible("704"); len(got) != 0 || len(srv.Deletes()) != 1 {
		t.Fatalf("the channel shows %q after a cancel", got)
	}
}

// TestDraft_ResendAfterCrashEditsTheDraft: with a DraftStore, a final reply
// resent by a new process (twice) edits the draft message, never posts a
// copy; a re-run turn's first draft adopts the message left open.
func TestDraft_ResendAfterCrashEditsTheDraft(t *testing.T) {
	srv := discordtest.NewServer(t)
	store := &cursors{}
	s := guildSession("705", "1")
	showDrafts(t, drafter(t, srv, store), s, dDraft("d1", 1, "Before the crash"))
	after := drafter(t, srv, store)
	for range 2 {
		if _, err := after.Send(context.Background(), s, dFinal("d1", "The answer.")); err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.Visible("705"); len(got) != 1 || got[0] != "The answer." {
		t.Fatalf("the channel shows %q, want one copy", got)
	}
	showDrafts(t, after, s, dDraft("d2", 1, "Run one"))
	again := drafter(t, srv, store)
	showDrafts(t, again, s, dDraft("d3", 1, "Run two"))
	if _, err := again.Send(context.Background(), s, dFinal("d3", "Run two, whole.")); err != nil {
		t.Fatal(err)
	}
	if got := srv.Visible("705"); len(got) != 2 || got[1] != "Run two, whole." {
		t.Fatalf("the channel shows %q", got)
	}
}

// TestDraft_PostedButNotRecordedIsFoundByItsNonce: killed after Discord
// created the draft message but before its id was recorded, the run that
// follows streams the same draft again; the nonce makes Discord hand back
// the message the run before created, so the channel ends with one copy.
func TestDraft_PostedButNotRecordedIsFoundByItsNonce(t *testing.T) {
	srv := discordtest.NewServer(t)
	s := guildSession("706", "1")
	// A store that keeps nothing: the record of the first post is lost.
	showDrafts(t, drafter(t, srv, nil), s, dDraft("in7-7", 1, "ack"))
	again := drafter(t, srv, &cursors{})
	showDrafts(t, again, s, dDraft("in7-7", 1, "ack"), dDraft("in7-7", 2, "ack tok"))
	if _, err := again.Send(context.Background(), s, dFinal("in7-7", "ack tok whole")); err != nil {
		t.Fatal(err)
	}
	if got := srv.Visible("706"); len(got) != 1 || got[0] != "ack tok whole" {
		t.Fatalf("the channel shows %q, want one copy of the answer", got)
	}
}

// frozen is a DraftStore killed after its first write per name: what it
// holds is what a process wrote before a kill that came between Discord
// creating the draft message and its id being recorded.
type frozen struct{ cursors }

func (f *frozen) SetCursor(ctx context.Context, name, value string) error {
	if v, _ := f.Cursor(ctx, name); v != "" {
		return nil
	}
	return f.cursors.SetCursor(ctx, name, value)
}

// TestDraft_PostUnderWayAtACrashIsFoundAgain: the record says a draft's
// post was under way; whatever the next run sends first, a draft of
// another name or the final reply alone, finds the message by the
// recorded draft's nonce, and the channel ends with one copy.
func TestDraft_PostUnderWayAtACrashIsFoundAgain(t *testing.T) {
	for _, next := range []string{"draft", "final"} {
		t.Run(next, func(t *testing.T) {
			srv := discordtest.NewServer(t)
			s := guildSession("707", "1")
			crashed := &frozen{}
			showDrafts(t, drafter(t, srv, crashed), s, dDraft("in3-3", 1, "ack"))
			if v, _ := crashed.Cursor(context.Background(), "discord:draft:"+s.Key()); !strings.HasSuffix(v, " posting") {
				t.Fatalf("the record before the post is %q", v)
			}
			store := &cursors{m: map[string]string{}}
			for k, v := range crashed.m {
				store.m[k] = v
			}
			again := drafter(t, srv, store)
			final := "in3-3"
			if next == "draft" {
				final = "in3-4" // an interrupt merged a second input meanwhile
				showDrafts(t, again, s, dDraft(final, 1, "ack tok"))
			}
			if _, err := again.Send(context.Background(), s, dFinal(final, "ack tok whole")); err != nil {
				t.Fatal(err)
			}
			if got := srv.Visible("707"); len(got) != 1 || got[0] != "ack tok whole" {
				t.Fatalf("the channel shows %q, want one copy of the answer", got)
			}
		})
	}
}

// TestDraft_FailedDraftPostThenAFailingFinal: the draft's one post met a
// 429, so its record says a post may have happened; the final reply then
// meets a 500 and is retried as a reply is, and lands once.
func TestDraft_FailedDraftPostThenAFailingFinal(t *testing.T) {
	srv := discordtest.NewServer(t)
	s := guildSession("708", "1")
	a := drafter(t, srv, &cursors{})
	srv.FailPosts("708", 1, discordtest.RateLimited(50*time.Millisecond))
	if err := a.Draft(context.Background(), s, dDraft("in9-9", 1, "ack")); err == nil {
		t.Fatal("the draft's post met a 429 and reported no error")
	}
	srv.FailPosts("708", 1, discordtest.ServerError())
	if _, err := a.Send(context.Background(), s, dFinal("in9-9", "ack tok whole")); err != nil {
		t.Fatal(err)
	}
	if got := srv.Visible("708"); len(got) != 1 || got[0] != "ack tok whole" {
		t.Fatalf("the channel shows %q, want the answer once", got)
	}
}

// TestDraft_VoiceRepliesAreNotEdits: a voice delivery naming a draft is
// still one voice message, posted, never an edit.
func TestDraft_VoiceRepliesAreNotEdits(t *testing.T) {
	srv := discordtest.NewServer(t)
	a := drafter(t, srv, nil)
	s := dmSession("706")
	ogg := discordtest.OggOpus(time.Second)
	d := &messages.Delivery{Kind: messages.DeliveryKind_DELIVERY_KIND_VOICE, Audio: ogg, Format: "ogg/opus", DurationSecs: 1,
		Waveform: discordtest.Waveform(), Last: true}
	if _, err := a.Send(context.Background(), s, d); err != nil {
		t.Fatal(err)
	}
	posts := srv.PostsTo("706")
	if len(posts) != 1 || !posts[0].IsVoice() || len(srv.Edits("706")) != 0 {
		t.Fatalf("posts %+v, want one voice message", posts)
	}
}

// TestDraft_TwoSessionsInOneChannel: two users streaming in one channel
// each finish in their own message.
func TestDraft_TwoSessionsInOneChannel(t *testing.T) {
	srv := discordtest.NewServer(t)
	a := drafter(t, srv, nil)
	ann, bob := guildSession("707", "1"), guildSession("707", "2")
	showDrafts(t, a, ann, dDraft("a", 1, "for ann"))
	showDrafts(t, a, bob, dDraft("b", 1, "for bob"))
	if _, err := a.Send(context.Background(), bob, dFinal("b", "bob's answer")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Send(context.Background(), ann, dFinal("a", "ann's answer")); err != nil {
		t.Fatal(err)
	}
	if got := srv.Visible("707"); len(got) != 2 || got[0] != "ann's answer" || got[1] != "bob's answer" {
		t.Fatalf("the channel shows %q", got)
	}
	if err := a.Draft(context.Background(), messages.MustSession(messages.Telegram, messages.DM, "9", "", ""), dDraft("x", 1, "x")); err == nil {
		t.Fatal("a Telegram session's draft was accepted")
	}
}
