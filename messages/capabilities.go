package messages

// Capabilities are what a platform declares once about itself. The TTS actor
// and the outbox look them up by the platform of a request's envelope; no
// caller chooses a format. They are vocabulary, here rather than in
// platforms, so that the adapters that declare them and the TTS actor that
// reads them never import each other.
type Capabilities struct {
	Platform Platform
	// VoiceFormat is the format of a spoken reply: FormatOggOpus where the
	// platform has voice notes, FormatMP3 elsewhere.
	VoiceFormat AudioFormat
	// VoiceNotes reports native voice notes (Telegram voice bubble, Discord
	// voice message).
	VoiceNotes bool
	// TextLimit is the longest text one message may carry, in the platform's
	// own unit (UTF-16 units on Telegram, characters on Discord); 0 = none.
	TextLimit int
	// CaptionLimit is the longest caption a voice note may carry; 0 = none.
	CaptionLimit int
	// MaxVoiceBytes is the largest voice note sent as voice; larger audio falls
	// back to a file. 0 = no limit.
	MaxVoiceBytes int
}
