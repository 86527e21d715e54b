package tts

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/audio/audiotest"
)

func TestEspeak_Synthesize(t *testing.T) {
	audiotest.NeedTool(t, "espeak-ng", "espeak-ng")
	e := &Espeak{}
	short, err := e.Synthesize(context.Background(), "Hi.", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	long, err := e.Synthesize(context.Background(), audiotest.SampleText, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if short.Data != nil || short.PCM.Rate != 22050 {
		t.Fatalf("want PCM at 22050 Hz, got rate %d, %d data bytes", short.PCM.Rate, len(short.Data))
	}
	if d := long.PCM.Duration(); d < 4*time.Second || d > 15*time.Second {
		t.Errorf("a 27-word text took %v", d)
	}
	if long.PCM.Duration() < 3*short.PCM.Duration() {
		t.Errorf("long text %v is not much longer than %v", long.PCM.Duration(), short.PCM.Duration())
	}
	if audiotest.RMS(long.PCM.Samples) < 500 {
		t.Errorf("speech RMS %.0f: nearly silent", audiotest.RMS(long.PCM.Samples))
	}
}

// TestEspeak_TextIsNotArguments checks text goes to espeak as text: a reply
// that starts with dashes or shell syntax is spoken, not interpreted.
func TestEspeak_TextIsNotArguments(t *testing.T) {
	audiotest.NeedTool(t, "espeak-ng", "espeak-ng")
	for _, text := range []string{"--help", "-w /tmp/owned.wav", "$(touch /tmp/owned); echo `id`"} {
		clip, err := (&Espeak{}).Synthesize(context.Background(), text, "", 0)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if clip.PCM.Duration() < 200*time.Millisecond {
			t.Errorf("%q produced %v of audio: not spoken as text", text, clip.PCM.Duration())
		}
	}
}

func TestEspeak_Voices(t *testing.T) {
	audiotest.NeedTool(t, "espeak-ng", "espeak-ng")
	de, err := (&Espeak{}).Synthesize(context.Background(), "Guten Tag.", "de", 0)
	if err != nil || len(de.PCM.Samples) == 0 {
		t.Errorf("voice de: %v", err)
	}
	_, err = (&Espeak{}).Synthesize(context.Background(), "Hello.", "xx-nosuchvoice", 0)
	if err == nil || !strings.Contains(err.Error(), "voice") {
		t.Errorf("unknown voice: err = %v, want espeak's complaint about the voice", err)
	}
	for _, v := range []string{"-x", "../../etc/passwd", "en us", ""} {
		if v == "" {
			continue
		}
		if _, err := (&Espeak{}).Synthesize(context.Background(), "Hi.", v, 0); err == nil || !strings.Contains(err.Error(), "invalid voice") {
			t.Errorf("voice %q: err = %v, want invalid voice", v, err)
		}
	}
}

func TestEspeak_Missing(t *testing.T) {
	_, err := (&Espeak{Path: "espeak-ng-not-here"}).Synthesize(context.Background(), "Hi.", "", 0)
	var missing *audio.MissingToolError
	if !errors.As(err, &missing) || !strings.Contains(err.Error(), "apt-get install espeak-ng") {
		t.Errorf("err = %v, want MissingToolError naming espeak-ng", err)
	}
}

func TestEspeak_Cancel(t *testing.T) {
	audiotest.NeedTool(t, "espeak-ng", "espeak-ng")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&Espeak{}).Synthesize(ctx, audiotest.SampleText, "", 0); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}
