package tts

import (
	"context"
	"fmt"
	"strconv"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/messages"
)

// Espeak defaults.
const (
	// DefaultEspeakVoice is US English, the voice most replies need.
	DefaultEspeakVoice = "en-us"
	// DefaultEspeakTextLimit bounds one request to a few minutes of speech:
	// espeak-ng has no limit of its own, but a voice note has to end.
	DefaultEspeakTextLimit = 5000
)

// Espeak is the offline default provider: espeak-ng as a subprocess. It is
// robotic but needs no keys, speaks 100+ languages and runs ~1000× real
// time, so a fresh install (and CI) can speak. It always returns PCM.
type Espeak struct {
	// Path is the binary; "" means "espeak-ng" from PATH.
	Path string
	// Voice is the default voice (espeak-ng -v), e.g. "en-us", "de",
	// "en-us+f3"; "" means DefaultEspeakVoice.
	Voice string
	// Speed is words per minute (espeak-ng -s); 0 keeps espeak's 175.
	Speed int
	// Limit is the text limit in runes; 0 means DefaultEspeakTextLimit.
	Limit int
}

var _ Provider = (*Espeak)(nil)

// Name implements Provider.
func (e *Espeak) Name() string { return "espeak-ng" }

// TextLimit implements Provider.
func (e *Espeak) TextLimit() int {
	if e.Limit > 0 {
		return e.Limit
	}
	return DefaultEspeakTextLimit
}

// Synthesize runs espeak-ng with the text on stdin (never on a command line,
// never through a shell) and parses the WAV it streams to stdout. want is
// ignored: espeak-ng only makes PCM.
func (e *Espeak) Synthesize(ctx context.Context, text, voice string, _ messages.AudioFormat) (Clip, error) {
	if voice == "" {
		voice = e.Voice
	}
	if voice == "" {
		voice = DefaultEspeakVoice
	}
	if !validVoice(voice) {
		return Clip{}, fmt.Errorf("espeak-ng: invalid voice name %q", voice)
	}
	path := e.Path
	if path == "" {
		path = "espeak-ng"
	}
	args := []string{"--stdin", "--stdout", "-b", "1", "-v", voice}
	if e.Speed > 0 {
		args = append(args, "-s", strconv.Itoa(e.Speed))
	}
	wav, err := audio.RunTool(ctx, path, "espeak-ng", args, []byte(text))
	if err != nil {
		return Clip{}, err
	}
	p, err := audio.ParseWAV(wav)
	if err != nil {
		return Clip{}, fmt.Errorf("espeak-ng output: %w", err)
	}
	if len(p.Samples) == 0 {
		return Clip{}, fmt.Errorf("espeak-ng: %w", audio.ErrEmptyAudio)
	}
	return Clip{PCM: p}, nil
}

// validVoice accepts voice names and ids as providers spell them
// ([A-Za-z0-9] then [A-Za-z0-9_+./-]), so a voice can never look like a flag
// or a path escape.
func validVoice(v string) bool {
	if v == "" || len(v) > 64 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '_' && c != '+' && c != '-' && c != '.' && c != '/') {
			return false
		}
	}
	return !containsDotDot(v)
}

func containsDotDot(v string) bool {
	for i := 0; i+1 < len(v); i++ {
		if v[i] == '.' && v[i+1] == '.' {
			return true
		}
	}
	return false
}
