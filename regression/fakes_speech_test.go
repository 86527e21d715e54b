package regression

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/stt"
)

// speechRequest is one synthesis request as a fake speech server saw it.
type speechRequest struct {
	Path   string
	Text   string
	Format string // response_format (OpenAI) or output_format (ElevenLabs)
	Voice  string
	Key    string // Authorization or xi-api-key
}

// speechFake is a cloud TTS endpoint on 127.0.0.1 that records what it was
// asked for.
type speechFake struct {
	URL  string // what HERMES_TTS_BASE_URL is set to
	mu   sync.Mutex
	reqs []speechRequest
}

func (f *speechFake) record(r speechRequest) {
	f.mu.Lock()
	f.reqs = append(f.reqs, r)
	f.mu.Unlock()
}

// asked returns the requests whose text contains sub.
func (f *speechFake) asked(sub string) []speechRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var r []speechRequest
	for _, q := range f.reqs {
		if strings.Contains(q.Text, sub) {
			r = append(r, q)
		}
	}
	return r
}

func speechClips(t *testing.T) map[string][]byte {
	t.Helper()
	c, err := clips()
	if err != nil {
		t.Fatalf("build speech clips (needs lame: apt-get install lame): %v", err)
	}
	return c
}

// openAISpeechFake is an OpenAI-compatible POST /v1/audio/speech. Honest,
// it answers in the response_format asked for ("opus" or "mp3"); with
// alwaysMP3 it misbehaves as some compatible servers do and returns MP3
// whatever was asked.
func openAISpeechFake(t *testing.T, alwaysMP3 bool) *speechFake {
	t.Helper()
	c := speechClips(t)
	f := &speechFake{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/audio/speech", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model, Input, Voice string
			ResponseFormat      string `json:"response_format"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
			return
		}
		f.record(speechRequest{Path: r.URL.Path, Text: req.Input, Format: req.ResponseFormat, Voice: req.Voice, Key: r.Header.Get("Authorization")})
		format := req.ResponseFormat
		if alwaysMP3 {
			format = "mp3"
		}
		b, ok := c[format]
		if !ok {
			http.Error(w, `{"error":{"message":"unsupported response_format"}}`, http.StatusBadRequest)
			return
		}
		if format == "mp3" {
			w.Header().Set("Content-Type", "audio/mpeg")
		} else {
			w.Header().Set("Content-Type", "audio/ogg")
		}
		_, _ = w.Write(b)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f.URL = srv.URL + "/v1"
	return f
}

// elevenLabsFake is POST /v1/text-to-speech/{voice}?output_format=…, as
// ElevenLabs serves it: opus_* gives Ogg/Opus, mp3_* gives MP3, and a
// request without the xi-api-key or an output_format is refused.
func elevenLabsFake(t *testing.T, key string) *speechFake {
	t.Helper()
	c := speechClips(t)
	f := &speechFake{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/text-to-speech/{voice}", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Text    string `json:"text"`
			ModelID string `json:"model_id"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"detail":"bad json"}`, http.StatusBadRequest)
			return
		}
		format := r.URL.Query().Get("output_format")
		f.record(speechRequest{Path: r.URL.Path, Text: req.Text, Format: format, Voice: r.PathValue("voice"), Key: r.Header.Get("xi-api-key")})
		if r.Header.Get("xi-api-key") != key {
			http.Error(w, `{"detail":"invalid api key"}`, http.StatusUnauthorized)
			return
		}
		var b []byte
		switch {
		case strings.HasPrefix(format, "opus_"):
			b = c["opus"]
			w.Header().Set("Content-Type", "audio/ogg")
		case strings.HasPrefix(format, "mp3_"):
			b = c["mp3"]
			w.Header().Set("Content-Type", "audio/mpeg")
		default:
			http.Error(w, `{"detail":"missing or unsupported output_format"}`, http.StatusBadRequest)
			return
		}
		_, _ = w.Write(b)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f.URL = srv.URL // the API root without /v1
	return f
}

// sttUpload is one POST /audio/transcriptions as the fake saw it.
type sttUpload struct {
	Filename string
	Model    string
	Data     []byte
}

// sttFake is an OpenAI-compatible POST /v1/audio/transcriptions. It knows
// the transcript of each clip a test registered (by its exact bytes) and
// refuses audio it was not given: what it returns proves which bytes it got.
type sttFake struct {
	URL         string
	mu          sync.Mutex
	uploads     []sttUpload
	transcripts map[string]string
}

func newSTTFake(t *testing.T) *sttFake {
	t.Helper()
	f := &sttFake{transcripts: make(map[string]string)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/audio/transcriptions", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseMultipartForm(stt.MaxAudioBytes); err != nil {
			http.Error(w, `{"error":{"message":"bad multipart"}}`, http.StatusBadRequest)
			return
		}
		file, hdr, err := r.FormFile("file")
		if err != nil {
			http.Error(w, `{"error":{"message":"no file"}}`, http.StatusBadRequest)
			return
		}
		data, _ := io.ReadAll(file)
		_ = file.Close()
		f.mu.Lock()
		f.uploads = append(f.uploads, sttUpload{Filename: hdr.Filename, Model: r.FormValue("model"), Data: data})
		text, ok := f.transcripts[string(data)]
		f.mu.Unlock()
		if !ok {
			http.Error(w, `{"error":{"message":"this is not audio the test sent"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"text": text})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f.URL = srv.URL + "/v1"
	return f
}

// expect makes audio transcribe to text.
func (f *sttFake) expect(audio []byte, text string) {
	f.mu.Lock()
	f.transcripts[string(audio)] = text
	f.mu.Unlock()
}

func (f *sttFake) got() []sttUpload {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sttUpload(nil), f.uploads...)
}

// webReply is one reply of the web chat, as POST /api/chat and the event
// stream show it.
type webReply struct {
	Kind   string `json:"kind"`
	Text   string `json:"text"`
	Format string `json:"format"`
	URL    string `json:"url"`
}

// webChat posts text to the web chat and returns the replies of its turn.
func (w *world) webChat(t *testing.T, chat, text string) []webReply {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"chat": chat, "text": text})
	res, err := http.Post(w.http.URL+"/api/chat", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var a struct {
		Replies []webReply `json:"replies"`
		Error   *struct{ Code, Message string }
	}
	if err := json.NewDecoder(res.Body).Decode(&a); err != nil {
		t.Fatalf("POST /api/chat: status %d, undecodable answer: %v", res.StatusCode, err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/chat: status %d, error %+v, replies %+v", res.StatusCode, a.Error, a.Replies)
	}
	return a.Replies
}

// webStream collects every reply a web chat's event stream pushes, from the
// moment it is opened: replies that arrive after POST /api/chat returned
// show up here too.
type webStream struct {
	mu      sync.Mutex
	replies []webReply
}

func (w *world) watchWebChat(t *testing.T, chat string) *webStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, w.http.URL+"/api/chat/"+chat+"/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		cancel()
		res.Body.Close()
		t.Fatalf("event stream: %s", res.Status)
	}
	s := &webStream{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev struct {
				Replies []webReply `json:"replies"`
			}
			if json.Unmarshal([]byte(data), &ev) == nil {
				s.mu.Lock()
				s.replies = append(s.replies, ev.Replies...)
				s.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

func (s *webStream) seen() []webReply {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]webReply(nil), s.replies...)
}

// await polls the stream until cond holds or within passes.
func (s *webStream) await(t *testing.T, what string, within time.Duration, cond func([]webReply) bool) []webReply {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r := s.seen()
		if cond(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s on the web event stream; it saw %+v", within, what, r)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pollUntil polls cond until it holds or within passes.
func pollUntil(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// webVoices returns the voice replies among r.
func webVoices(r []webReply) []webReply {
	var v []webReply
	for _, x := range r {
		if x.Kind == "voice" {
			v = append(v, x)
		}
	}
	return v
}

func webHasText(r []webReply, sub string) bool {
	for _, x := range r {
		if x.Kind == "text" && strings.Contains(x.Text, sub) {
			return true
		}
	}
	return false
}
