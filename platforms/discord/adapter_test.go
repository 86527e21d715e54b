package discord_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms/discord"
	"github.com/hermesd/hermesd/platforms/discord/discordtest"
)

// TestAdapter runs one gateway session against the fake for every inbound
// behaviour (each discordgo Close costs a second, so they share it).
func TestAdapter(t *testing.T) {
	srv := discordtest.NewServer(t)
	stt := &transcriber{}
	a, box := startAdapter(t, srv, discord.Config{FreeResponseChannels: []string{"free"}},
		discord.Deps{Gate: allowAllBut("intruder"), Transcriber: stt, Dedup: &dedup{}}, true)

	t.Run("Intents", func(t *testing.T) {
		const want = 1<<9 | 1<<12 | 1<<15 // guild messages, direct messages, message content
		if got := srv.Intents(); got&want != want {
			t.Errorf("intents = %d, want at least %d", got, want)
		}
	})

	t.Run("DMRoundTrip", func(t *testing.T) {
		id := srv.DM("dm1", "u1", "hello there")
		m := box.waitID(t, id)
		if got, want := m.GetSessionKey(), "discord:dm:dm1"; got != want {
			t.Errorf("session key = %q, want %q", got, want)
		}
		if m.GetText() != "hello there" || m.GetSenderId() != "u1" || m.GetFromVoice() {
			t.Errorf("message = %v", m)
		}
		posts := srv.WaitPostsTo(t, "dm1", 1)
		if got, want := posts[0].Content, "echo: hello there"; got != want {
			t.Errorf("reply = %q, want %q", got, want)
		}
		if r := posts[0].Reference; r == nil || r.MessageID != id {
			t.Errorf("reply references %+v, want message %s", r, id)
		}
	})

	t.Run("ThreadRoundTrip", func(t *testing.T) {
		id := srv.ThreadMessage("g1", "parent1", "thread1", "u2", "what is a goroutine?", true)
		m := box.waitID(t, id)
		if got, want := m.GetSessionKey(), "discord:thread:parent1:thread1"; got != want {
			t.Errorf("session key = %q, want %q", got, want)
		}
		if got, want := m.GetText(), "what is a goroutine?"; got != want {
			t.Errorf("text = %q, want %q (mention stripped)", got, want)
		}
		posts := srv.WaitPostsTo(t, "thread1", 1)
		if posts[0].Content != "echo: what is a goroutine?" {
			t.Errorf("reply = %q", posts[0].Content)
		}
		if n := len(srv.PostsTo("parent1")); n != 0 {
			t.Errorf("%d posts in the parent channel, want 0", n)
		}
	})

	t.Run("GuildNeedsMention", func(t *testing.T) {
		ignored := srv.GuildMessage("g1", "chan1", "u3", "just chatting with friends", false)
		answered := srv.GuildMessage("g1", "chan1", "u3", "what time is it?", true)
		m := box.waitID(t, answered)
		// Same channel, handled in order: the first was decided before.
		if n := box.count(ignored); n != 0 {
			t.Errorf("message without mention reached Inbound %d times", n)
		}
		if got, want := m.GetSessionKey(), "discord:group:chan1:uu3"; got != want {
			t.Errorf("session key = %q, want %q", got, want)
		}
		if m.GetText() != "what time is it?" {
			t.Errorf("text = %q, want the mention stripped", m.GetText())
		}
		posts := srv.WaitPostsTo(t, "chan1", 1)
		if len(posts) != 1 || posts[0].Content != "echo: what time is it?" {
			t.Errorf("posts in chan1 = %+v", posts)
		}
	})

	t.Run("FreeResponseChannel", func(t *testing.T) {
		id := srv.GuildMessage("g1", "free", "u4", "no mention needed here", false)
		if m := box.waitID(t, id); m.GetSessionKey() != "discord:group:free:uu4" {
			t.Errorf("session key = %q", m.GetSessionKey())
		}
	})

	t.Run("ReplyToBotCountsAsMention", func(t *testing.T) {
		id, err := srv.Inject(discordtest.Message{GuildID: "g1", ChannelID: "chan2", AuthorID: "u5",
			Content: "and another thing", ReplyTo: "424242", ReplyToBot: true})
		if err != nil {
			t.Fatal(err)
		}
		if m := box.waitID(t, id); m.GetReplyToId() != "424242" {
			t.Errorf("reply_to_id = %q, want 424242", m.GetReplyToId())
		}
	})

	t.Run("OwnAndBotMessagesIgnored", func(t *testing.T) {
		own, _ := srv.Inject(discordtest.Message{ChannelID: "dm-own", AuthorID: discordtest.BotID, Content: "my own reply"})
		bot, _ := srv.Inject(discordtest.Message{ChannelID: "dm-own", AuthorID: "u777", AuthorIsBot: true, Content: "beep"})
		human := srv.DM("dm-own", "u6", "hi")
		box.waitID(t, human)
		if box.count(own) != 0 || box.count(bot) != 0 {
			t.Error("the bot's own or another bot's message reached Inbound")
		}
	})

	t.Run("UnauthorizedNeverReachesInbound", func(t *testing.T) {
		id := srv.DM("dm-intruder", "intruder", "let me in")
		posts := srv.WaitPostsTo(t, "dm-intruder", 1)
		if got := posts[0].Content; got != "You are not allowed to talk to me." {
			t.Errorf("refusal = %q", got)
		}
		if box.count(id) != 0 {
			t.Error("an unauthorized user's message reached Inbound")
		}
		// Also not in a guild, even when mentioning the bot; no reply there.
		gid := srv.GuildMessage("g1", "chan-intruder", "intruder", "hey bot", true)
		srv.GuildMessage("g1", "chan-intruder", "u8", "hey bot", true)
		srv.WaitPostsTo(t, "chan-intruder", 1)
		if box.count(gid) != 0 {
			t.Error("an unauthorized user's guild message reached Inbound")
		}
		if posts := srv.PostsTo("chan-intruder"); len(posts) != 1 || posts[0].Content != "echo: hey bot" {
			t.Errorf("posts in guild channel = %+v", posts)
		}
	})

	t.Run("InboundErrorShownToUser", func(t *testing.T) {
		id := srv.DM("dm-refuse", "u9", "please refuse this")
		posts := srv.WaitPostsTo(t, "dm-refuse", 1)
		if got := posts[0].Content; got != "Sorry, I can't take that message right now." {
			t.Errorf("notice = %q", got)
		}
		if r := posts[0].Reference; r == nil || r.MessageID != id {
			t.Errorf("notice references %+v, want %s", r, id)
		}
	})

	t.Run("InboundVoiceTranscribed", func(t *testing.T) {
		ogg := discordtest.OggOpus(2500 * time.Millisecond)
		id := srv.VoiceMessage("", "dm-voice", "u1", ogg, 2.5)
		m := box.waitID(t, id)
		calls := stt.Calls()
		if len(calls) != 1 || !bytes.Equal(calls[0].audio, ogg) || calls[0].filename != "voice-message.ogg" {
			t.Fatalf("transcriber calls = %d, want one with the downloaded ogg", len(calls))
		}
		if !m.GetFromVoice() || m.GetText() != fmt.Sprintf("spoken words (%d bytes)", len(ogg)) {
			t.Errorf("from_voice = %v, text = %q", m.GetFromVoice(), m.GetText())
		}
		atts := m.GetAttachments()
		if len(atts) != 1 || atts[0].GetKind() != "voice" || atts[0].GetDurationSecs() != 2.5 {
			t.Errorf("attachments = %v", atts)
		}
		if srv.CDNGets() != 1 {
			t.Errorf("%d CDN downloads, want 1", srv.CDNGets())
		}
	})

	t.Run("AttachmentsDescribed", func(t *testing.T) {
		id, err := srv.Inject(discordtest.Message{ChannelID: "dm-files", AuthorID: "u1", Content: "look",
			Attachments: []discordtest.Attachment{
				{Filename: "cat.png", ContentType: "image/png", Data: []byte("png")},
				{Filename: "notes.pdf", ContentType: "application/pdf", Data: []byte("pdf!")},
			}})
		if err != nil {
			t.Fatal(err)
		}
		m := box.waitID(t, id)
		var kinds []string
		for _, a := range m.GetAttachments() {
			kinds = append(kinds, a.GetKind()+":"+a.GetName())
		}
		if want := []string{"photo:cat.png", "document:notes.pdf"}; !slices.Equal(kinds, want) {
			t.Errorf("attachments = %v, want %v", kinds, want)
		}
	})

	t.Run("PerChannelOrder", func(t *testing.T) {
		const channels, each = 4, 40
		var ids []string
		for i := range each {
			for c := range channels {
				ids = append(ids, srv.DM(fmt.Sprintf("order%d", c), "u1", fmt.Sprintf("%d", i)))
			}
		}
		want := map[string]bool{}
		for _, id := range ids {
			want[id] = true
		}
		msgs := box.wait(t, "all ordered messages", func(ms []*messages.UserMessage) bool {
			n := 0
			for _, m := range ms {
				if want[m.GetMessageId()] {
					n++
				}
			}
			return n == len(ids)
		})
		next := map[string]int{}
		for _, m := range msgs {
			if !want[m.GetMessageId()] {
				continue
			}
			k := m.GetSessionKey()
			if got := m.GetText(); got != fmt.Sprint(next[k]) {
				t.Fatalf("%s: got message %q, want %d: out of order", k, got, next[k])
			}
			next[k]++
		}
		// Replies too leave in order per channel (the echo runs per message,
		// so only check that every one arrived).
		for c := range channels {
			srv.WaitPostsTo(t, fmt.Sprintf("order%d", c), each)
		}
	})

	t.Run("FiveHundredChannels", func(t *testing.T) {
		const n = 500
		for i := range n {
			srv.DM(fmt.Sprintf("load%d", i), fmt.Sprintf("u%d", i), fmt.Sprintf("ping %d", i))
		}
		srv.Await(t, "a reply in every channel", func() bool {
			got := 0
			for _, p := range srv.Posts() {
				if strings.HasPrefix(p.ChannelID, "load") {
					got++
				}
			}
			return got >= n
		})
		perChannel := map[string]int{}
		for _, p := range srv.Posts() {
			if !strings.HasPrefix(p.ChannelID, "load") {
				continue
			}
			perChannel[p.ChannelID]++
			if want := "echo: ping " + strings.TrimPrefix(p.ChannelID, "load"); p.Content != want {
				t.Errorf("channel %s got %q, want %q", p.ChannelID, p.Content, want)
			}
		}
		for ch, k := range perChannel {
			if k != 1 {
				t.Errorf("channel %s got %d replies, want 1", ch, k)
			}
		}
		if len(perChannel) != n {
			t.Errorf("replies in %d channels, want %d", len(perChannel), n)
		}
	})

	t.Run("Typing", func(t *testing.T) {
		if err := a.Indicate(t.Context(), dmSession("dm1"), "typing"); err != nil {
			t.Fatal(err)
		}
		if got := srv.Typing("dm1"); got != 1 {
			t.Errorf("typing posts = %d, want 1", got)
		}
	})

	t.Run("Health", func(t *testing.T) {
		if h := a.Health(); !h.Connected {
			t.Errorf("health = %+v, want connected", h)
		}
	})
}

// TestAdapter_ResumeNeverAnswersTwice drops the gateway socket; discordgo
// resumes, the fake replays every event (at-least-once), and still each
// message is answered exactly once.
func TestAdapter_ResumeNeverAnswersTwice(t *testing.T) {
	srv := discordtest.NewServer(t)
	a, box := startAdapter(t, srv, discord.Config{}, discord.Deps{Dedup: &dedup{}}, true)

	first := srv.DM("dm-r", "u1", "before the drop")
	srv.WaitPostsTo(t, "dm-r", 1)

	srv.ReplayAllOnResume(true)
	srv.DropSocket()
	eventually(t, "health to report the dead gateway", func() bool {
		return strings.Contains(a.Health().LastError, "disconnected")
	})
	second := srv.DM("dm-r", "u1", "after the drop")
	srv.WaitResumes(t, 1)
	box.waitID(t, second)
	posts := srv.WaitPostsTo(t, "dm-r", 2)

	if n := box.count(first); n != 1 {
		t.Errorf("first message reached Inbound %d times, want 1", n)
	}
	if n := box.count(second); n != 1 {
		t.Errorf("second message reached Inbound %d times, want 1", n)
	}
	var refs []string
	for _, p := range posts {
		refs = append(refs, p.Reference.MessageID)
	}
	if want := []string{first, second}; !slices.Equal(refs, want) {
		t.Errorf("replies answer %v, want %v", refs, want)
	}
	if got := srv.Identifies(); got != 1 {
		t.Errorf("%d identifies, want 1 (a resume, not a new session)", got)
	}
	eventually(t, "health to report the gateway back", func() bool { return a.Health().Connected })
}

// TestAdapter_NoTranscriberAndAutoThread covers a second configuration:
// voice without a transcriber arrives as a described voice attachment, and
// AutoThread moves conversations into threads.
func TestAdapter_NoTranscriberAndAutoThread(t *testing.T) {
	srv := discordtest.NewServer(t)
	_, box := startAdapter(t, srv, discord.Config{AutoThread: true}, discord.Deps{}, true)

	t.Run("VoiceWithoutTranscriber", func(t *testing.T) {
		id := srv.VoiceMessage("", "dm-v", "u1", discordtest.OggOpus(time.Second), 1)
		m := box.waitID(t, id)
		if m.GetText() != "" || m.GetFromVoice() {
			t.Errorf("text = %q, from_voice = %v; want empty, false", m.GetText(), m.GetFromVoice())
		}
		if a := m.GetAttachments(); len(a) != 1 || a[0].GetKind() != "voice" || a[0].GetMimeType() != "audio/ogg" {
			t.Errorf("attachments = %v, want one voice", a)
		}
		if srv.CDNGets() != 0 {
			t.Error("voice downloaded with nothing to transcribe it")
		}
	})

	t.Run("AutoThread", func(t *testing.T) {
		id := srv.GuildMessage("g1", "lobby", "u1", "help me plan a trip", true)
		m := box.waitID(t, id)
		threads := srv.Threads()
		if len(threads) != 1 || threads[0].ParentID != "lobby" || threads[0].MessageID != id {
			t.Fatalf("threads = %+v", threads)
		}
		th := threads[0].ThreadID
		if got, want := m.GetSessionKey(), "discord:thread:lobby:"+th; got != want {
			t.Errorf("session key = %q, want %q", got, want)
		}
		srv.WaitPostsTo(t, th, 1)
		if n := len(srv.PostsTo("lobby")); n != 0 {
			t.Errorf("%d posts in the channel, want them in the thread", n)
		}
		// The bot's thread needs no mention.
		next := srv.ThreadMessage("g1", "lobby", th, "u1", "to Lisbon", false)
		if m := box.waitID(t, next); m.GetSessionKey() != "discord:thread:lobby:"+th {
			t.Errorf("session key = %q", m.GetSessionKey())
		}
	})
}

// TestAdapter_DisallowedIntentStopsRun: a gateway refusal no retry can fix
// (the Message Content intent not enabled) ends Run with an error that says
// what to do, instead of reconnecting forever.
func TestAdapter_DisallowedIntentStopsRun(t *testing.T) {
	srv := discordtest.NewServer(t)
	srv.RefuseIdentify(4014, "Disallowed intent(s).")
	a, err := discord.New(discord.Config{Token: discordtest.Token, APIURL: srv.URL}, discord.Deps{Gate: allowAllBut(), Log: testLog()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err = a.Run(ctx, newInbox(t).in)
	if err == nil || !strings.Contains(err.Error(), "Message Content intent") {
		t.Fatalf("Run = %v, want an error about the Message Content intent", err)
	}
	if h := a.Health(); h.Connected || !strings.Contains(h.LastError, "4014") {
		t.Errorf("health = %+v", h)
	}
}
