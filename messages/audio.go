package messages

// AudioFormat is the container and codec of a piece of speech.
type AudioFormat int

// Audio formats. The zero value is invalid so that a forgotten format is an
// error, never a silent default.
const (
	// FormatOggOpus is Opus in an Ogg container: a Telegram voice bubble or a
	// Discord voice message.
	FormatOggOpus AudioFormat = iota + 1
	// FormatMP3 is MPEG-1 Layer III: plays in every browser; sent as an audio
	// file where a platform has no voice notes.
	FormatMP3
)

// String returns the name used in APIs and metrics: "ogg/opus" or "mp3".
func (f AudioFormat) String() string {
	switch f {
	case FormatOggOpus:
		return "ogg/opus"
	case FormatMP3:
		return "mp3"
	}
	return "invalid"
}

// MIMEType returns the Content-Type for the format.
func (f AudioFormat) MIMEType() string {
	switch f {
	case FormatOggOpus:
		return "audio/ogg"
	case FormatMP3:
		return "audio/mpeg"
	}
	return "application/octet-stream"
}

// Ext returns the file extension, with its dot.
func (f AudioFormat) Ext() string {
	switch f {
	case FormatOggOpus:
		return ".ogg"
	case FormatMP3:
		return ".mp3"
	}
	return ".bin"
}

// ParseAudioFormat is the inverse of String.
func ParseAudioFormat(s string) (AudioFormat, bool) {
	switch s {
	case "ogg/opus":
		return FormatOggOpus, true
	case "mp3":
		return FormatMP3, true
	}
	return 0, false
}
