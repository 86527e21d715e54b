package tts

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/audio/audiotest"
	"github.com/hermesd/hermesd/messages"
)

func TestSynthesizer_Espeak(t *testing.T) {
	audiotest.NeedTool(t, "espeak-ng", "espeak-ng")
	audiotest.NeedTool(t, "lame", "lame")
	s := &Synthesizer{Provider: &Espeak{}}
	pcm := audiotest.EspeakPCM(t, audiotest.SampleText)

	t.Run("ogg/opus", func(t *testing.T) {
		sp, err := s.Speak(context.Background(), "  "+audiotest.SampleText+"\n", "", messages.FormatOggOpus)
		if err != nil {
			t.Fatal(err)
		}
		audiotest.CheckOggOpus(t, sp.Data, 312, 22050)
		if d := (sp.Duration - pcm.Duration()).Abs(); d > 25*time.Millisecond {
			t.Errorf("duration %v, PCM %v", sp.Duration, pcm.Duration())
		}
		if len(sp.Waveform) != 256 || sp.Truncated {
			t.Errorf("waveform %d values, truncated %v", len(sp.Waveform), sp.Truncated)
		}
		audiotest.RunOpusinfo(t, sp.Data)
	})
	t.Run("mp3", func(t *testing.T) {
		sp, err := s.Speak(context.Background(), audiotest.SampleText, "", messages.FormatMP3)
		if err != nil {
			t.Fatal(err)
		}
		if audio.Sniff(sp.Data) != audio.ContainerMP3 || sp.Format != messages.FormatMP3 {
			t.Fatalf("sniffed %v", audio.Sniff(sp.Data))
		}
		if sp.Duration != pcm.Duration() {
			t.Errorf("duration %v, PCM %v", sp.Duration, pcm.Duration())
		}
	})
	t.Run("truncated", func(t *testing.T) {
		short := &Synthesizer{Provider: &Espeak{Limit: 30}}
		sp, err := short.Speak(context.Background(), audiotest.SampleText, "", messages.FormatOggOpus)
		if err != nil {
			t.Fatal(err)
		}
		if !sp.Truncated || sp.Duration > pcm.Duration()/2 {
			t.Errorf("truncated %v, duration %v of %v", sp.Truncated, sp.Duration, pcm.Duration())
		}
	})
}

// funcProvider is a Provider from a function, for the conversions.
type funcProvider struct {
	limit int
	fn    func(text string, want messages.AudioFormat) (Clip, error)
}

func (f funcProvider) Name() string   { return "fake" }
func (f funcProvider) TextLimit() int { return f.limit }
func (f funcProvider) Synthesize(_ context.Context, text, _ string, want messages.AudioFormat) (Clip, error) {
	return f.fn(text, want)
}

func TestSynthesizer_Conversions(t *testing.T) {
	tone := audiotest.Sine(16000, 1, 300, 0.5)
	ogg, err := audio.EncodeOggOpus(context.Background(), tone, audio.OpusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clips := map[string]Clip{"wav": {Data: audio.EncodeWAV(tone)}, "ogg": {Data: ogg}, "pcm": {PCM: tone}}
	for name, clip := range clips {
		for _, f := range []messages.AudioFormat{messages.FormatOggOpus, messages.FormatMP3} {
			if f == messages.FormatMP3 {
				audiotest.NeedTool(t, "lame", "lame")
			}
			s := &Synthesizer{Provider: funcProvider{fn: func(string, messages.AudioFormat) (Clip, error) { return clip, nil }}}
			sp, err := s.Speak(context.Background(), "x", "", f)
			if err != nil {
				t.Errorf("%s → %v: %v", name, f, err)
				continue
			}
			want := map[messages.AudioFormat]audio.Container{messages.FormatOggOpus: audio.ContainerOggOpus, messages.FormatMP3: audio.ContainerMP3}[f]
			if audio.Sniff(sp.Data) != want || sp.Format != f {
				t.Errorf("%s → %v: got %v", name, f, audio.Sniff(sp.Data))
			}
			if (sp.Duration - time.Second).Abs() > 25*time.Millisecond {
				t.Errorf("%s → %v: duration %v", name, f, sp.Duration)
			}
		}
	}
}

func TestSynthesizer_Refusals(t *testing.T) {
	ok := funcProvider{fn: func(string, messages.AudioFormat) (Clip, error) {
		return Clip{PCM: audiotest.Sine(24000, 0.1, 300, 0.5)}, nil
	}}
	s := &Synthesizer{Provider: ok}
	if _, err := s.Speak(context.Background(), "hi", "", 0); !errors.Is(err, ErrUnsupportedFormat) {
		t.Errorf("zero format: %v, want ErrUnsupportedFormat (no default)", err)
	}
	if _, err := s.Speak(context.Background(), " \n\t", "", messages.FormatOggOpus); !errors.Is(err, ErrEmptyText) {
		t.Errorf("blank text: %v, want ErrEmptyText", err)
	}
	silent := &Synthesizer{Provider: funcProvider{fn: func(string, messages.AudioFormat) (Clip, error) { return Clip{PCM: audio.PCM{Rate: 22050}}, nil }}}
	if _, err := silent.Speak(context.Background(), "hi", "", messages.FormatOggOpus); !errors.Is(err, audio.ErrEmptyAudio) {
		t.Errorf("empty PCM: %v, want ErrEmptyAudio", err)
	}
	failing := &Synthesizer{Provider: funcProvider{fn: func(string, messages.AudioFormat) (Clip, error) { return Clip{}, errors.New("engine on fire") }}}
	if _, err := failing.Speak(context.Background(), "hi", "", messages.FormatOggOpus); err == nil || !strings.Contains(err.Error(), "engine on fire") {
		t.Errorf("provider error lost: %v", err)
	}
	var got string
	limited := &Synthesizer{Provider: funcProvider{limit: 5, fn: func(text string, _ messages.AudioFormat) (Clip, error) {
		got = text
		return Clip{PCM: audiotest.Sine(24000, 0.1, 300, 0.5)}, nil
	}}}
	sp, err := limited.Speak(context.Background(), "one two three", "", messages.FormatOggOpus)
	if err != nil || !sp.Truncated || got != "one" {
		t.Errorf("limit 5: provider got %q, truncated %v, err %v", got, sp != nil && sp.Truncated, err)
	}
}
