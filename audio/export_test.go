package audio

// Internals the external tests (package audio_test) check directly.
var (
	OggCRC     = oggCRC
	IsMP3Frame = isMP3Frame
)

// Wire constants the tests build hand-made files with.
const (
	OggBOS              = oggBOS
	WAVFormatPCM        = wavFormatPCM
	WAVFormatFloat      = wavFormatFloat
	WAVFormatExtensible = wavFormatExtensible
)
