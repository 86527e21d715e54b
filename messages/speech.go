package messages

import "time"

// SynthesizeSpeech asks the TTS actor to speak text for the conversation that
// sent it. The destination format is not a field: the TTS actor derives it
// from the Session stamped in the envelope and that platform's capabilities.
// Sender: a bound actor (tool, turn, session). Receiver: the TTS actor.
// Reply: *Speech or *SpeechFailed.
type SynthesizeSpeech struct {
	Text string
	// Voice overrides the configured voice; "" uses the default.
	Voice string
}

// SessionScoped marks SynthesizeSpeech as meaningless without an identity.
func (*SynthesizeSpeech) SessionScoped() {}

// Speech is synthesized audio, encoded for the requesting session's platform.
type Speech struct {
	Format   AudioFormat
	Data     []byte
	Duration time.Duration
	// Waveform holds 256 amplitude values 0–255 over the whole clip.
	Waveform []byte
	// Truncated is true when the text was cut to the provider's limit.
	Truncated bool
}

// SpeechFailed is the TTS actor's answer when synthesis failed, the queue
// was full past its bound ("busy"), or the request had no identity.
type SpeechFailed struct {
	Err error
}
