package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/hermesd/hermesd/actors"
	"github.com/hermesd/hermesd/config"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/tts"
)

// speech builds the TTS provider from the configuration and the shared TTS
// actor, which encodes each request for the platform in its envelope, as
// that platform's adapter declared.
func (d *Daemon) speech(deps *actors.Deps) error {
	if d.cfg.TTSProvider == "none" {
		return nil
	}
	first, err := ttsProvider(d.cfg)
	if err != nil {
		return err
	}
	p := &liveProvider{} // a reload swaps the provider and voice behind it
	p.p.Store(&first)
	d.reload.speaker = p
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

// ttsProvider builds the provider cfg names.
func ttsProvider(cfg config.Config) (tts.Provider, error) {
	switch cfg.TTSProvider {
	case "espeak":
		return &tts.Espeak{Voice: cfg.TTSVoice}, nil
	case "openai":
		return &tts.OpenAI{BaseURL: cfg.TTSBaseURL, APIKey: cfg.ModelAPIKey, Voice: cfg.TTSVoice}, nil
	case "elevenlabs":
		el := &tts.ElevenLabs{APIKey: cfg.ElevenLabsKey, Voice: cfg.TTSVoice}
		if cfg.TTSBaseURL != "" {
			el.BaseURL = cfg.TTSBaseURL
		}
		return el, nil
	}
	return nil, fmt.Errorf("HERMES_TTS_PROVIDER: unknown provider %q", cfg.TTSProvider)
}
