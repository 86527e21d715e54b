package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/messages"
)

// Transcriber turns speech into text (stt.Client). filename tells the
// provider the format by its extension.
type Transcriber interface {
	Transcribe(ctx context.Context, audio []byte, filename string) (string, error)
}

// MaxVoiceBytes is the largest recording POST /api/chat/{id}/voice takes:
// about ten minutes of the browser's Opus.
const MaxVoiceBytes = 10 << 20

// recordingTypes are the recordings accepted, by media type: what browsers'
// MediaRecorder produces (WebM or Ogg with Opus, MP4 on Safari) and WAV.
// Each is checked against its bytes and named with its extension for the
// transcription provider, which decodes it itself.
var recordingTypes = map[string]struct {
	ext   string
	magic func([]byte) bool
}{
	"audio/webm": {".webm", func(b []byte) bool { return bytes.HasPrefix(b, []byte{0x1a, 0x45, 0xdf, 0xa3}) }},
	"audio/ogg":  {".ogg", func(b []byte) bool { return bytes.HasPrefix(b, []byte("OggS")) }},
	"audio/wav":  {".wav", func(b []byte) bool { return audio.Sniff(b) == audio.ContainerWAV }},
	"audio/mp4":  {".m4a", func(b []byte) bool { return len(b) > 12 && string(b[4:8]) == "ftyp" }},
	"audio/mpeg": {".mp3", func(b []byte) bool { return audio.Sniff(b) == audio.ContainerMP3 }},
}

// voiceAnswer is the answer of POST /api/chat/{id}/voice.
type voiceAnswer struct {
	Transcript string  `json:"transcript"`
	Replies    []Reply `json:"replies"`
}

// handleVoice takes a recording for web:dm:<id>: it is transcribed and the
// transcript goes to the session as a voice message, so /voice on answers
// it with speech. Like POST /api/chat it answers with the turn's replies.
func (a *Adapter) handleVoice(w http.ResponseWriter, r *http.Request, timeout time.Duration) {
	s, err := Session(r.PathValue("id"))
	if err != nil {
		WriteError(w, http.StatusBadRequest, "bad_chat", err.Error())
		return
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	kind, ok := recordingTypes[mt]
	if err != nil || !ok {
		// No HTML form can send these types, as with application/json.
		WriteError(w, http.StatusUnsupportedMediaType, "unsupported_media_type",
			"send the recording as audio/webm, audio/ogg, audio/mp4, audio/mpeg or audio/wav")
		return
	}
	if a.stt == nil {
		WriteError(w, http.StatusNotImplemented, "no_stt", "voice messages need speech-to-text: set HERMES_STT_PROVIDER=openai")
		return
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxVoiceBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			WriteError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("recording over %d bytes", MaxVoiceBytes))
			return
		}
		WriteError(w, http.StatusBadRequest, "bad_body", "the recording could not be read: "+err.Error())
		return
	}
	if !kind.magic(b) {
		WriteError(w, http.StatusBadRequest, "bad_audio", "the body is not "+mt)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	text, err := a.stt.Transcribe(ctx, b, "voice"+kind.ext)
	cancel()
	if err != nil {
		a.log.Warn("web voice transcription", "session", s.Key(), "err", err)
		WriteError(w, http.StatusBadGateway, "stt_failed", "the recording could not be transcribed")
		return
	}
	if strings.TrimSpace(text) == "" {
		WriteError(w, http.StatusUnprocessableEntity, "no_speech", "no words were heard in the recording")
		return
	}
	replies, ok := a.submit(w, r, s, &messages.UserMessage{
		Text: text, FromVoice: true,
		Attachments: []*messages.Attachment{{Kind: "voice", Name: "voice" + kind.ext, MimeType: mt, Size: int64(len(b))}},
	}, timeout)
	if ok {
		WriteJSON(w, http.StatusOK, voiceAnswer{Transcript: text, Replies: replies})
	}
}
