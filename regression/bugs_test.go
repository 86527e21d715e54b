package regression

import (
	"fmt"
	"testing"
	"time"

	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

// TestAutoTTSAfterTurnFinishedIsAVoiceBubble guards the Python gateway's
// most reported bug: auto-TTS ran after the session was cleared, so a
// Telegram voice reply arrived as an MP3 file. In hermesd the session
// speaks the finished reply itself; it arrives as a voice bubble, encoded
// by the real espeak-ng → Opus → Ogg pipeline.
func TestAutoTTSAfterTurnFinishedIsAVoiceBubble(t *testing.T) {
	w := newWorld(t, worldOptions{realSpeech: true})
	w.tg.SendText(42, 42, "/voice tts")
	w.tg.SendText(42, 42, "hello "+token("telegram", "42", 1))
	outs := w.await(t, "spoken reply", 30*time.Second, func(o []out) bool { return countVoices(in(o, "telegram:42")) == 1 && hasText(o, "ack") })
	if bad := misrouted(outs); len(bad) > 0 {
		t.Fatalf("%v\n%s", bad, dump(outs))
	}
}

// TestVoiceIsNeverSentAsAFile: on platforms with voice notes, speech is a
// voice bubble / voice message — never sendAudio, sendDocument or a plain
// attachment — whichever path produced it (tool, auto-TTS).
func TestVoiceIsNeverSentAsAFile(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.tg.SendText(7, 7, "speak "+token("telegram", "7", 1))
	w.tg.SendText(8, 8, "/voice tts")
	w.tg.SendText(8, 8, "plain "+token("telegram", "8", 2))
	w.dc.DM("300", "30", "speak "+token("discord", "300", 3))
	outs := w.await(t, "three voices", 30*time.Second, func(o []out) bool { return countVoices(o) >= 3 && hasText(o, "ack tok:discord") })
	if bad := misrouted(outs); len(bad) > 0 {
		t.Fatalf("%v\n%s", bad, dump(outs))
	}
	for _, chat := range []string{"telegram:7", "telegram:8", "discord:300"} {
		if n := countVoices(in(outs, chat)); n != 1 {
			t.Fatalf("%s got %d voices, want 1\n%s", chat, n, dump(outs))
		}
	}
}

// TestReviewStartedFromAToolSpeaksOggInItsOwnChat: a background follow-up
// asked for from inside a tool (a skill review) is the session's child; when
// it speaks, Ogg/Opus goes to its own chat, and its note follows.
func TestReviewStartedFromAToolSpeaksOggInItsOwnChat(t *testing.T) {
	w := newWorld(t, worldOptions{})
	tok := token("telegram", "-1001", 1)
	w.tg.SendText(-1001, 5, "review "+tok, telegramtest.InGroup(), telegramtest.Mention())
	outs := w.await(t, "review voice and note", 30*time.Second, func(o []out) bool {
		return countVoices(in(o, "telegram:-1001")) == 1 && hasText(o, "saved "+tok)
	})
	if bad := misrouted(outs); len(bad) > 0 {
		t.Fatalf("%v\n%s", bad, dump(outs))
	}
}

// TestCronJobThatSpeaksDeliversToItsChatInItsFormat: a job created in one
// chat fires into that chat — on Telegram and on Discord — and its speech
// is each platform's voice note.
func TestCronJobThatSpeaksDeliversToItsChatInItsFormat(t *testing.T) {
	w := newWorld(t, worldOptions{})
	tt, dt := token("telegram", "77", 1), token("discord", "500", 2)
	w.tg.SendText(77, 77, "cron "+tt)
	w.dc.DM("500", "50", "cron "+dt)
	outs := w.await(t, "both jobs fired", 30*time.Second, func(o []out) bool {
		return hasText(in(o, "telegram:77"), "fired "+tt) && hasText(in(o, "discord:500"), "fired "+dt) &&
			countVoices(in(o, "telegram:77")) == 1 && countVoices(in(o, "discord:500")) == 1
	})
	if bad := misrouted(outs); len(bad) > 0 {
		t.Fatalf("%v\n%s", bad, dump(outs))
	}
}

// TestDelegatedSubAgentSpeaksInItsParentsChat: a sub-agent is a child of
// the delegating tool; what it says aloud reaches the parent's chat.
func TestDelegatedSubAgentSpeaksInItsParentsChat(t *testing.T) {
	w := newWorld(t, worldOptions{})
	tok := token("discord", "600", 1)
	w.dc.DM("600", "60", "delegate "+tok)
	outs := w.await(t, "sub-agent voice", 30*time.Second, func(o []out) bool {
		return countVoices(in(o, "discord:600")) == 1 && hasText(in(o, "discord:600"), "ack "+tok)
	})
	if bad := misrouted(outs); len(bad) > 0 {
		t.Fatalf("%v\n%s", bad, dump(outs))
	}
}

// TestTelegramAndDiscordSessionsCannotChangeEachOthersIdentity: many
// sessions on both platforms speak at once; each voice note lands on its own
// platform, in its own chat, in that platform's format.
func TestTelegramAndDiscordSessionsCannotChangeEachOthersIdentity(t *testing.T) {
	w := newWorld(t, worldOptions{})
	const n = 40
	for i := 0; i < n; i++ {
		tc, dc := int64(1000+i), fmt.Sprint(2000+i)
		w.tg.SendText(tc, tc, "speak "+token("telegram", fmt.Sprint(tc), i))
		w.dc.DM(dc, fmt.Sprint(3000+i), "speak "+token("discord", dc, i))
	}
	outs := w.await(t, "every voice", 60*time.Second, func(o []out) bool { return countVoices(o) == 2*n && len(o) >= 4*n })
	if bad := misrouted(outs); len(bad) > 0 {
		t.Fatalf("%d problems, first: %v", len(bad), bad[0])
	}
	for i := 0; i < n; i++ {
		for _, chat := range []string{fmt.Sprint("telegram:", 1000+i), fmt.Sprint("discord:", 2000+i)} {
			if c := countVoices(in(outs, chat)); c != 1 {
				t.Fatalf("%s got %d voices\n%s", chat, c, dump(in(outs, chat)))
			}
		}
	}
}
