package tts

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/messages"
)

// Provider is a speech engine. The Synthesizer asks it for speech in the
// format the destination wants; a provider that can produce that format
// natively (cloud providers asked for Opus) saves a transcode, and one that
// cannot returns what it has (espeak-ng returns PCM, a provider may return
// MP3 regardless) and the Synthesizer converts.
type Provider interface {
	// Name identifies the provider in errors and logs.
	Name() string
	// TextLimit is the most characters (runes) one request may carry; the
	// Synthesizer cuts longer text with Truncate before calling Synthesize.
	TextLimit() int
	// Synthesize speaks text with voice ("" = the provider's default),
	// preferring the format want. It must honour ctx.
	Synthesize(ctx context.Context, text, voice string, want messages.AudioFormat) (Clip, error)
}

// Clip is a provider's output: either encoded bytes, or PCM.
type Clip struct {
	// Data is encoded audio as the provider returned it (nil when PCM is
	// set). Its Container is judged by Sniff, never by what was asked for.
	Data []byte
	// PCM is raw audio, from engines that synthesise locally.
	PCM audio.PCM
}

// Truncate cuts text to at most limit runes. It cuts after the last sentence
// end (. ! ? … or a line break) that keeps at least half the allowed text; else
// at the last space in that half; else mid-word at the limit. truncated
// reports whether anything was cut, so the caller can tell the user. A limit
// of 0 or less means no limit.
func Truncate(text string, limit int) (out string, truncated bool) {
	if limit <= 0 || utf8.RuneCountInString(text) <= limit {
		return text, false
	}
	// Byte offset of the rune at index limit: the prefix is text[:cut].
	cut := len(text)
	for i := range text {
		if limit == 0 {
			cut = i
			break
		}
		limit--
	}
	prefix := text[:cut]
	half := len(prefix) / 2
	// spaceAt reports whether text has a space (or its end) at byte i.
	spaceAt := func(i int) bool {
		if i >= len(text) {
			return true
		}
		r, _ := utf8.DecodeRuneInString(text[i:])
		return unicode.IsSpace(r)
	}
	for end := len(prefix); end >= half && end > 0; {
		r, size := utf8.DecodeLastRuneInString(prefix[:end])
		// CJK full stops need no following space; Latin ones do ("3.5").
		if r == '\n' || strings.ContainsRune("。！？", r) || strings.ContainsRune(".!?…", r) && spaceAt(end) {
			return strings.TrimSpace(prefix[:end]), true
		}
		end -= size
	}
	if i := strings.LastIndexFunc(prefix, unicode.IsSpace); i >= half && i > 0 {
		return strings.TrimSpace(prefix[:i]), true
	}
	return strings.TrimSpace(prefix), true
}
