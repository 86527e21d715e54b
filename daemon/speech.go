package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/hermesd/hermesd/actors"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/tts"
)

// speech builds the TTS provider from the configuration and the shared TTS
// actor, which encodes each request for the platform in its envelope, as
// that platform's adapter declared.
func (d *Daemon) speech(deps *actors.Deps) error {
	var p tts.Provider
	switch d.cfg.TTSProvider {
	case "none":
		return nil
	case "espeak":
		p = &tts.Espeak{Voice: d.cfg.TTSVoice}
	case "openai":
		p = &tts.OpenAI{BaseURL: d.cfg.TTSBaseURL, APIKey: d.cfg.ModelAPIKey, Voice: d.cfg.TTSVoice}
	case "elevenlabs":
		el := &tts.ElevenLabs{APIKey: d.cfg.ElevenLabsKey, Voice: d.cfg.TTSVoice}
		if d.cfg.TTSBaseURL != "" {
			el.BaseURL = d.cfg.TTSBaseURL
		}
		p = el
	default:
		return fmt.Errorf("HERMES_TTS_PROVIDER: unknown provider %q", d.cfg.TTSProvider)
	}
	caps := make(map[messages.Platform]messages.Capabilities, len(deps.Adapters))
	for _, a := range deps.Adapters {
		c := a.Capabilities()
		caps[c.Platform] = c
	}
	props, pool, err := tts.NewActor(tts.ActorConfig{
		Speaker: &tts.Synthesizer{Provider: p, Log: d.log},
		Capabilities: func(pl messages.Platform) (messages.Capabilities, bool) {
			c, ok := caps[pl]
			return c, ok
		},
		Guard: d.guard,
		Log:   d.log.With("actor", "tts"),
		Observe: func(platform messages.Platform, format messages.AudioFormat, took time.Duration, err error) {
			if m := d.Metrics(); m != nil {
				m.TTS(platform, format, took, err)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("tts: %w", err)
	}
	d.closers = append(d.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = pool.Close(ctx)
	})
	deps.TTS = props
	return nil
}
