package tts

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/audio/audiotest"
	"github.com/hermesd/hermesd/messages"
)

// mp3Fixture is espeak speech encoded by lame: what a cloud provider sends
// when it answers MP3.
func mp3Fixture(t *testing.T) (mp3 []byte, src audio.PCM) {
	t.Helper()
	audiotest.NeedTool(t, "lame", "lame")
	src = audiotest.EspeakPCM(t, audiotest.SampleText)
	if b, ok := mp3Cache.Load(audiotest.SampleText); ok {
		return b.([]byte), src
	}
	mp3, err := audio.EncodeMP3(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	mp3Cache.Store(audiotest.SampleText, mp3)
	return mp3, src
}

// mp3Cache holds mp3Fixture's encodings per text: one lame run per test
// binary.
var mp3Cache sync.Map

// fakeAPI is a TTS API on 127.0.0.1 that records requests and answers with
// canned audio.
type fakeAPI struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []*http.Request
	bodies []map[string]string
}

func newFakeAPI(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, body map[string]string)) *fakeAPI {
	t.Helper()
	f := &fakeAPI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]string
		raw, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(raw, &body); err != nil {
			http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, r)
		f.bodies = append(f.bodies, body)
		f.mu.Unlock()
		answer(w, r, body)
	}))
	t.Cleanup(f.Close)
	if !strings.HasPrefix(f.URL, "http://127.0.0.1:") {
		t.Fatalf("fake API at %s, want loopback", f.URL)
	}
	return f
}

func (f *fakeAPI) last(t *testing.T) (*http.Request, map[string]string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) == 0 {
		t.Fatal("no request reached the fake API")
	}
	return f.reqs[len(f.reqs)-1], f.bodies[len(f.bodies)-1]
}

func serve(b []byte, contentType string) func(http.ResponseWriter, *http.Request, map[string]string) {
	return func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(b)
	}
}

func TestOpenAI_MP3WhereOpusAsked_IsTranscoded(t *testing.T) {
	mp3, _ := mp3Fixture(t)
	api := newFakeAPI(t, serve(mp3, "audio/ogg")) // lies about its content type, too
	s := &Synthesizer{Provider: &OpenAI{BaseURL: api.URL + "/v1", APIKey: "sk-test", Model: "tts-1"}}

	sp, err := s.Speak(context.Background(), audiotest.SampleText, "nova", messages.FormatOggOpus)
	if err != nil {
		t.Fatal(err)
	}
	r, body := api.last(t)
	if r.Method != http.MethodPost || r.URL.Path != "/v1/audio/speech" {
		t.Errorf("request %s %s", r.Method, r.URL.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization %q", got)
	}
	want := map[string]string{"model": "tts-1", "input": audiotest.SampleText, "voice": "nova", "response_format": "opus"}
	for k, v := range want {
		if body[k] != v {
			t.Errorf("body[%s] = %q, want %q", k, body[k], v)
		}
	}

	if sp.Format != messages.FormatOggOpus {
		t.Fatalf("format %v", sp.Format)
	}
	// lame at 22.05 kHz → decoded at 22.05 kHz → Opus at 24 kHz.
	audiotest.CheckOggOpus(t, sp.Data, 312, 22050)
	dec, err := audio.DecodeMP3(mp3)
	if err != nil {
		t.Fatal(err)
	}
	if d := (sp.Duration - dec.Duration()).Abs(); d > 25*time.Millisecond {
		t.Errorf("duration %v, the MP3 is %v", sp.Duration, dec.Duration())
	}
	if len(sp.Waveform) != 256 {
		t.Errorf("waveform has %d values", len(sp.Waveform))
	}
	audiotest.RunOpusinfo(t, sp.Data)
}

func TestOpenAI_NativeOpusPassesThrough(t *testing.T) {
	ogg, err := audio.EncodeOggOpus(context.Background(), audiotest.Sine(48000, 2, 220, 0.4), audio.OpusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	api := newFakeAPI(t, serve(ogg, "audio/ogg"))
	s := &Synthesizer{Provider: &OpenAI{BaseURL: api.URL + "/v1/"}} // trailing slash tolerated
	sp, err := s.Speak(context.Background(), "Hello.", "", messages.FormatOggOpus)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sp.Data, ogg) {
		t.Error("provider Ogg/Opus was re-encoded instead of passed through")
	}
	if sp.Duration != 2*time.Second {
		t.Errorf("duration %v, want 2s", sp.Duration)
	}
	if sp.Waveform[128] < 200 {
		t.Errorf("waveform of a loud tone: bar %d", sp.Waveform[128])
	}
	r, body := api.last(t)
	if r.Header.Get("Authorization") != "" {
		t.Error("sent an Authorization header with no key configured")
	}
	if body["voice"] != DefaultOpenAIVoice || body["model"] != DefaultOpenAIModel {
		t.Errorf("defaults not applied: %v", body)
	}
}

func TestOpenAI_MP3ForWeb(t *testing.T) {
	mp3, _ := mp3Fixture(t)
	api := newFakeAPI(t, serve(mp3, "audio/mpeg"))
	sp, err := (&Synthesizer{Provider: &OpenAI{BaseURL: api.URL}}).Speak(context.Background(), "Hi.", "", messages.FormatMP3)
	if err != nil {
		t.Fatal(err)
	}
	if _, body := api.last(t); body["response_format"] != "mp3" {
		t.Errorf("response_format %q, want mp3", body["response_format"])
	}
	if !bytes.Equal(sp.Data, mp3) || sp.Format != messages.FormatMP3 {
		t.Error("MP3 for an MP3 request should pass through")
	}
	if sp.Duration < 4*time.Second {
		t.Errorf("duration %v", sp.Duration)
	}
}

func TestOpenAI_Errors(t *testing.T) {
	api := newFakeAPI(t, func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided"}}`))
	})
	_, err := (&Synthesizer{Provider: &OpenAI{BaseURL: api.URL, APIKey: "sk-secret-123"}}).Speak(context.Background(), "Hi.", "", messages.FormatOggOpus)
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(err.Error(), "Incorrect API key") {
		t.Errorf("err = %v, want HTTP 401 with the provider's message", err)
	}
	if err != nil && strings.Contains(err.Error(), "sk-secret-123") {
		t.Error("the API key leaked into the error")
	}

	html := newFakeAPI(t, serve([]byte("<html>gateway says hi</html>"), "audio/ogg"))
	if _, err := (&Synthesizer{Provider: &OpenAI{BaseURL: html.URL}}).Speak(context.Background(), "Hi.", "", messages.FormatOggOpus); err == nil {
		t.Error("HTML accepted as audio")
	}
	vorbis := newFakeAPI(t, serve(audiotest.VorbisHeaderPage(), "audio/ogg"))
	_, err = (&Synthesizer{Provider: &OpenAI{BaseURL: vorbis.URL}}).Speak(context.Background(), "Hi.", "", messages.FormatOggOpus)
	if err == nil || !strings.Contains(err.Error(), "ogg/vorbis") {
		t.Errorf("Ogg/Vorbis: err = %v, want a refusal naming ogg/vorbis", err)
	}
}

func TestOpenAI_Truncates(t *testing.T) {
	mp3, _ := mp3Fixture(t)
	api := newFakeAPI(t, serve(mp3, "audio/mpeg"))
	s := &Synthesizer{Provider: &OpenAI{BaseURL: api.URL, Limit: 60}}
	long := "This first sentence fits easily. " + strings.Repeat("But this one goes on and on ", 10)
	sp, err := s.Speak(context.Background(), long, "", messages.FormatMP3)
	if err != nil {
		t.Fatal(err)
	}
	_, body := api.last(t)
	if !sp.Truncated {
		t.Error("Speech.Truncated is false")
	}
	if body["input"] != "This first sentence fits easily." {
		t.Errorf("sent %q (%d runes)", body["input"], utf8.RuneCountInString(body["input"]))
	}
}

func TestElevenLabs_MP3WhereOpusAsked_IsTranscoded(t *testing.T) {
	mp3, _ := mp3Fixture(t)
	api := newFakeAPI(t, serve(mp3, "audio/mpeg"))
	el := &ElevenLabs{BaseURL: api.URL, APIKey: "xi-test", Voice: "VoiceABC123"}
	sp, err := (&Synthesizer{Provider: el}).Speak(context.Background(), audiotest.SampleText, "", messages.FormatOggOpus)
	if err != nil {
		t.Fatal(err)
	}
	r, body := api.last(t)
	if r.Method != http.MethodPost || r.URL.Path != "/v1/text-to-speech/VoiceABC123" {
		t.Errorf("request %s %s", r.Method, r.URL.Path)
	}
	if got := r.URL.Query().Get("output_format"); got != "opus_48000_32" {
		t.Errorf("output_format %q, want opus_48000_32", got)
	}
	if got := r.Header.Get("xi-api-key"); got != "xi-test" {
		t.Errorf("xi-api-key %q", got)
	}
	if body["text"] != audiotest.SampleText || body["model_id"] != DefaultElevenLabsModel {
		t.Errorf("body %v", body)
	}
	audiotest.CheckOggOpus(t, sp.Data, 312, 22050)
	audiotest.RunOpusinfo(t, sp.Data)
}

func TestElevenLabs_MP3AndVoiceOverride(t *testing.T) {
	mp3, _ := mp3Fixture(t)
	api := newFakeAPI(t, serve(mp3, "audio/mpeg"))
	sp, err := (&Synthesizer{Provider: &ElevenLabs{BaseURL: api.URL}}).Speak(context.Background(), "Hi.", "OtherVoice9", messages.FormatMP3)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := api.last(t)
	if r.URL.Path != "/v1/text-to-speech/OtherVoice9" || r.URL.Query().Get("output_format") != "mp3_44100_64" {
		t.Errorf("request %s", r.URL)
	}
	if !bytes.Equal(sp.Data, mp3) {
		t.Error("MP3 should pass through")
	}
	if _, err := (&ElevenLabs{BaseURL: api.URL}).Synthesize(context.Background(), "Hi.", "../admin", messages.FormatMP3); err == nil {
		t.Error("voice id with a path accepted")
	}
	e := newFakeAPI(t, func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
		w.WriteHeader(http.StatusPaymentRequired)
		_, _ = w.Write([]byte(`{"detail":{"status":"quota_exceeded","message":"You have 0 credits"}}`))
	})
	if _, err := (&ElevenLabs{BaseURL: e.URL}).Synthesize(context.Background(), "Hi.", "", messages.FormatMP3); err == nil || !strings.Contains(err.Error(), "0 credits") {
		t.Errorf("err = %v, want the quota message", err)
	}
}
