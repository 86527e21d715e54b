package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/daemon"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/model/modeltest"
)

// browser starts a headless chromium that never leaves loopback and
// returns a context to drive it, bounded by timeout.
func browser(t *testing.T, timeout time.Duration, flags ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed; scripts/deps.sh test installs it")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.ProxyServer("http://127.0.0.1:9"), // anything off loopback goes nowhere
	)
	opts = append(opts, flags...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	ctx, cancel := context.WithTimeout(bctx, timeout)
	t.Cleanup(func() { cancel(); cancelBrowser(); cancelAlloc() })
	return ctx
}

// gate holds a streaming fake model at chosen chunks until the test opens
// them: what the page shows at each point is then certain, not a race.
type gate struct {
	mu    sync.Mutex
	gates map[int]chan struct{}
}

func newGate(at ...int) *gate {
	g := &gate{gates: make(map[int]chan struct{})}
	for _, i := range at {
		g.gates[i] = make(chan struct{})
	}
	return g
}

func (g *gate) open(i int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ch, ok := g.gates[i]; ok {
		close(ch)
		delete(g.gates, i)
	}
}

func (g *gate) beforeChunk(ctx context.Context, i int) error {
	g.mu.Lock()
	ch := g.gates[i]
	g.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(30 * time.Second):
		return errors.New("the test never opened the gate")
	}
}

// pageState is what the Markdown test reads off the page.
type pageState struct {
	Bold     string `json:"bold"`
	Pwned    any    `json:"pwned"`
	Scripts  int    `json:"scripts"`
	Images   int    `json:"images"`
	Code     string `json:"code"`
	Copy     int    `json:"copy"`
	Drafts   int    `json:"drafts"`
	Thinking bool   `json:"thinking"`
}

// TestBrowser_WebChatStreamsRendersAndRemembers: in chromium, the page
// shows a thinking indicator, then the answer growing while the model is
// still writing, then the final answer as formatted Markdown with its
// <script> inert and a copy button on its code; after a reload the
// conversation is still there.
func TestBrowser_WebChatStreamsRendersAndRemembers(t *testing.T) {
	const answer = "Here is **bold** text. <script>window.pwned = 1</script><img src=x onerror=\"window.pwned = 2\">\n\n```go\nfmt.Println(\"hi\")\n```\n"
	g := newGate(0, 6)
	m := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Reply(answer)), modeltest.WithStreaming(modeltest.Streaming{
		ChunkRunes: 4, BeforeChunk: g.beforeChunk,
	}))
	r := start(t, testConfig(t, t.TempDir(), map[string]string{"OPENAI_BASE_URL": m.URL()}), daemon.Options{})
	ctx := browser(t, 60*time.Second)
	defer g.open(0)
	defer g.open(6)

	if err := chromedp.Do(ctx,
		chromedp.Navigate(r.srv.URL+"/?chat=browser-md"),
		chromedp.WaitVisible(chromedp.CSS(`.note`)),
		chromedp.SendKeys(chromedp.CSS(`#t`), "show me markdown"),
		chromedp.Click(chromedp.CSS(`#send`)),
		chromedp.WaitVisible(chromedp.CSS(`.thinking`)),
	); err != nil {
		t.Fatal("no thinking indicator:", err)
	}
	g.open(0) // the model starts writing; it stops again before chunk 6
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`.msg.bot.draft`))); err != nil {
		t.Fatal("no draft:", err)
	}
	partial, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.msg.bot.draft`)))
	if err != nil {
		t.Fatal(err)
	}
	finals, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(".msg.bot:not(.draft)").length`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(partial, "Here") || len(partial) >= len("Here is bold text.") || finals != 0 {
		t.Fatalf("while the model writes the page shows %q (final replies: %d)", partial, finals)
	}
	g.open(6)

	const inspect = `({bold: (document.querySelector(".msg.bot .md strong") || {}).textContent,
		pwned: window.pwned === undefined ? null : window.pwned,
		scripts: document.querySelectorAll("#log script").length,
		images: document.querySelectorAll("#log img").length,
		code: (document.querySelector(".msg.bot pre code") || {}).textContent,
		copy: document.querySelectorAll(".msg.bot pre button.copy").length,
		drafts: document.querySelectorAll(".msg.bot.draft").length,
		thinking: !!document.querySelector(".thinking")})`
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`.msg.bot:not(.draft) pre button.copy`))); err != nil {
		t.Fatal(err)
	}
	state, err := chromedp.Run(ctx, chromedp.Evaluate[pageState](inspect))
	if err != nil {
		t.Fatal(err)
	}
	if state.Bold != "bold" || state.Pwned != nil || state.Scripts != 0 || state.Images != 0 ||
		state.Code != "fmt.Println(\"hi\")\n" || state.Copy != 1 || state.Drafts != 0 || state.Thinking {
		t.Fatalf("after the answer: %+v", state)
	}

	// A reload shows the conversation from the store.
	if err := chromedp.Do(ctx,
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`.note`)),
		chromedp.WaitVisible(chromedp.CSS(`.msg.bot .md strong`)),
	); err != nil {
		t.Fatal(err)
	}
	mine, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.msg.me`)))
	if err != nil {
		t.Fatal(err)
	}
	if state, err = chromedp.Run(ctx, chromedp.Evaluate[pageState](inspect)); err != nil {
		t.Fatal(err)
	}
	if mine != "show me markdown" || state.Bold != "bold" || state.Pwned != nil || state.Scripts != 0 || state.Copy != 1 {
		t.Fatalf("after a reload: mine %q, %+v", mine, state)
	}
}

// TestBrowser_VoiceReplyPlays: with /voice tts the page gets an MP3 reply
// that chromium loads and plays.
func TestBrowser_VoiceReplyPlays(t *testing.T) {
	r := start(t, testConfig(t, t.TempDir(), map[string]string{"HERMES_TTS_PROVIDER": "espeak"}), daemon.Options{})
	ctx := browser(t, 60*time.Second, chromedp.Flag("autoplay-policy", "no-user-gesture-required"))
	if err := chromedp.Do(ctx,
		chromedp.Navigate(r.srv.URL+"/?chat=browser-voice"),
		chromedp.WaitVisible(chromedp.CSS(`.note`)),
		chromedp.SendKeys(chromedp.CSS(`#t`), "say good morning"),
		chromedp.Click(chromedp.CSS(`#send`)),
		chromedp.WaitReady(chromedp.CSS(`.msg.bot audio`)),
	); err != nil {
		t.Fatal(err)
	}
	type playback struct {
		Duration float64 `json:"duration"`
		Error    any     `json:"error"`
		Time     float64 `json:"time"`
	}
	played, err := chromedp.Run(ctx, chromedp.Evaluate[playback](`new Promise((resolve) => {
		const a = document.querySelector(".msg.bot audio");
		a.addEventListener("error", () => resolve({duration: 0, error: a.error ? a.error.code : "error", time: 0}));
		a.addEventListener("timeupdate", () => { if (a.currentTime > 0) resolve({duration: a.duration, error: null, time: a.currentTime}); });
		a.play().catch((e) => resolve({duration: 0, error: String(e), time: 0}));
	})`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if played.Error != nil || played.Duration <= 0 || played.Time <= 0 {
		t.Fatalf("the voice reply did not play: %+v", played)
	}
}

// fakeSTT is an OpenAI-compatible transcription endpoint on loopback that
// records what it was sent.
type fakeSTT struct {
	mu       sync.Mutex
	files    []string
	webm     bool
	heardLen int
}

func (f *fakeSTT) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/audio/transcriptions" || r.ParseMultipartForm(16<<20) != nil {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	file, hdr, err := r.FormFile("file")
	if err != nil {
		http.Error(w, `{"error":{"message":"no file"}}`, http.StatusBadRequest)
		return
	}
	defer file.Close()
	head := make([]byte, 4)
	n, _ := file.Read(head)
	f.mu.Lock()
	f.files = append(f.files, hdr.Filename)
	f.webm = n == 4 && string(head) == "\x1a\x45\xdf\xa3"
	f.heardLen = int(hdr.Size)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"text": "please say the weather is fine"})
}

// toneWAV writes a second of a 440 Hz tone, chromium's fake microphone.
func toneWAV(t *testing.T) string {
	t.Helper()
	p := audio.PCM{Rate: 48000, Samples: make([]int16, 48000)}
	for i := range p.Samples {
		p.Samples[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/48000))
	}
	path := filepath.Join(t.TempDir(), "tone.wav")
	if err := os.WriteFile(path, audio.EncodeWAV(p), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBrowser_RecordedVoiceMessageIsAnswered: the microphone button records
// (chromium's fake device playing a WAV), the page uploads the recording,
// the transcript is the user's message, and with /voice on the answer is
// spoken.
func TestBrowser_RecordedVoiceMessageIsAnswered(t *testing.T) {
	stt := &fakeSTT{}
	sttSrv := httptest.NewServer(stt)
	defer sttSrv.Close()
	m := &recordingModel{}
	r := start(t, testConfig(t, t.TempDir(), map[string]string{
		"HERMES_TTS_PROVIDER": "espeak", "HERMES_STT_PROVIDER": "openai", "HERMES_STT_BASE_URL": sttSrv.URL + "/v1",
	}), daemon.Options{Model: m})
	ctx := browser(t, 60*time.Second,
		chromedp.Flag("use-fake-ui-for-media-stream", true),
		chromedp.Flag("use-fake-device-for-media-stream", true),
		chromedp.Flag("use-file-for-fake-audio-capture", toneWAV(t)),
	)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(r.srv.URL+"/?chat=browser-mic"),
		chromedp.WaitVisible(chromedp.CSS(`.note`)),
		chromedp.SendKeys(chromedp.CSS(`#t`), "/voice on"),
		chromedp.Click(chromedp.CSS(`#send`)),
		chromedp.WaitVisible(chromedp.CSS(`.msg.bot`)),
		chromedp.Click(chromedp.CSS(`#mic`)),
		chromedp.WaitVisible(chromedp.CSS(`#mic.recording`)),
		// Stop once the recorder has handed over some audio.
		chromedp.Poll[chromedp.Void](`Number(document.getElementById("mic").dataset.bytes || 0) > 2000`, chromedp.WithPollingInterval(50*time.Millisecond)),
		chromedp.Click(chromedp.CSS(`#mic`)),
		chromedp.WaitVisible(chromedp.CSS(`.msg.bot audio`)),
	); err != nil {
		t.Fatal(err)
	}
	mine, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.msg.me.voice`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(mine, "please say the weather is fine") {
		t.Fatalf("the page shows the voice message as %q", mine)
	}
	stt.mu.Lock()
	files, webm := stt.files, stt.webm
	stt.mu.Unlock()
	if len(files) != 1 || files[0] != "voice.webm" || !webm {
		t.Fatalf("speech-to-text got %v (webm: %v)", files, webm)
	}
	if !m.saw("please say the weather is fine") {
		t.Fatal("the transcript never reached the model")
	}
}

// TestBrowser_ToolBeingRunIsShown: while the model waits for a tool's
// result the page names the tool, and the final answer replaces it.
func TestBrowser_ToolBeingRunIsShown(t *testing.T) {
	afterTool := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(afterTool) }) }
	defer release()
	call := modeltest.CallTool("current_time", `{}`, "It is *noon*.")
	m := modeltest.NewServer(t, modeltest.WithHandler(func(ctx context.Context, req model.Request) (model.Response, error) {
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == model.RoleTool {
			select { // the second call waits until the test saw the tool shown
			case <-afterTool:
			case <-ctx.Done():
				return model.Response{}, ctx.Err()
			}
		}
		return call(ctx, req)
	}))
	r := start(t, testConfig(t, t.TempDir(), map[string]string{"OPENAI_BASE_URL": m.URL()}), daemon.Options{})
	ctx := browser(t, 60*time.Second)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(r.srv.URL+"/?chat=browser-tool"),
		chromedp.WaitVisible(chromedp.CSS(`.note`)),
		chromedp.SendKeys(chromedp.CSS(`#t`), "what time is it"),
		chromedp.Click(chromedp.CSS(`#send`)),
		chromedp.WaitVisible(chromedp.CSS(`.msg.bot.draft .tool`)),
	); err != nil {
		t.Fatal(err)
	}
	tool, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.msg.bot.draft .tool`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tool, "running current_time") {
		t.Fatalf("the page shows %q while the tool runs", tool)
	}
	release()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`.msg.bot:not(.draft) .md em`))); err != nil {
		t.Fatal(err)
	}
	left, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(".msg.bot.draft, .thinking").length`))
	if err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d drafts or indicators left after the answer", left)
	}
}

// TestBrowser_ReminderIsLabelled: a reminder nobody asked for right then
// arrives on the page labelled as a reminder, apart from the answers.
func TestBrowser_ReminderIsLabelled(t *testing.T) {
	r := start(t, testConfig(t, t.TempDir(), nil), daemon.Options{})
	ctx := browser(t, 60*time.Second)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(r.srv.URL+"/?chat=browser-remind"),
		chromedp.WaitVisible(chromedp.CSS(`.note`)),
		chromedp.SendKeys(chromedp.CSS(`#t`), "remind me in 1s to stretch"),
		chromedp.Click(chromedp.CSS(`#send`)),
		chromedp.WaitVisible(chromedp.CSS(`.msg.bot.unprompted[data-origin="cron"] .origin`)),
	); err != nil {
		t.Fatal(err)
	}
	label, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.msg.bot.unprompted[data-origin="cron"]`)))
	if err != nil {
		t.Fatal(err)
	}
	if l := strings.ToLower(label); !strings.HasPrefix(l, "reminder") || !strings.Contains(l, "stretch") {
		t.Fatalf("the reminder shows as %q", label)
	}
	set, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(".msg.bot:not(.unprompted) .origin").length`))
	if err != nil {
		t.Fatal(err)
	}
	if set != 0 {
		t.Fatalf("%d answers to the user carry an origin label", set)
	}
}

// TestBrowser_AttachedPhotoReachesTheModel: in chromium, a photo chosen
// with the page's 📎 button goes with the message, and reaches a vision
// model as an image part holding the very bytes of the file.
func TestBrowser_AttachedPhotoReachesTheModel(t *testing.T) {
	fake := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Reply("a small grey square")))
	r := start(t, testConfig(t, t.TempDir(), map[string]string{"OPENAI_BASE_URL": fake.URL(), "HERMES_MODEL_VISION": "on",
		"HERMES_REVIEW_EVERY": "0", "HERMES_SWEEP_EVERY": "0"}), daemon.Options{})
	var pic bytes.Buffer
	if err := png.Encode(&pic, image.NewGray(image.Rect(0, 0, 16, 16))); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "square.png")
	if err := os.WriteFile(path, pic.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := browser(t, 60*time.Second)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(r.srv.URL+"/?chat=browser-photo"),
		chromedp.WaitVisible(chromedp.CSS(`#attach`)),
		chromedp.SetUploadFiles(chromedp.CSS(`#file`), []string{path}),
		chromedp.SendKeys(chromedp.CSS(`#t`), "what is this?"),
		chromedp.Click(chromedp.CSS(`#send`)),
		chromedp.WaitVisible(chromedp.CSS(`.msg.bot`)),
	); err != nil {
		t.Fatal(err)
	}
	shown, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.msg.me`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(shown, "what is this?") || !strings.Contains(shown, "square.png") {
		t.Errorf("the page shows the message as %q", shown)
	}
	msgs := fake.LastRequest(t).Request.Messages
	last := msgs[len(msgs)-1]
	if len(last.Images) != 1 || !bytes.Equal(last.Images[0].Data, pic.Bytes()) || !strings.HasPrefix(last.Content, "what is this?") {
		t.Fatalf("the model got %q with %d images", last.Content, len(last.Images))
	}
}
