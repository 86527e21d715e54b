package api

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/platforms/web"
)

// MaxBodyBytes is the largest request accepted. Clients send the whole
// conversation with every request, so it is larger than the web chat's;
// only the last user message is used (the runtime limits its size).
const MaxBodyBytes = 8 << 20

// SessionHeader names the conversation when the body's "user" does not.
const SessionHeader = "X-Hermes-Session"

// Routes registers the endpoint on mux. replyTimeout bounds how long a
// request waits for the turn's answer.
func (a *Adapter) Routes(mux *http.ServeMux, replyTimeout time.Duration) {
	mux.HandleFunc("GET /v1/models", a.handleModels)
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		a.handleCompletions(w, r, replyTimeout)
	})
}

func (a *Adapter) handleModels(w http.ResponseWriter, _ *http.Request) {
	web.WriteJSON(w, http.StatusOK, modelList{Object: "list", Data: []modelInfo{{ID: a.model, Object: "model", OwnedBy: "hermesd"}}})
}

// writeError answers in OpenAI's error shape, which its clients show.
func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	var b errorBody
	b.Error.Message, b.Error.Type, b.Error.Code = msg, typ, code
	web.WriteJSON(w, status, b)
}

// sessionID turns the name a client gave its conversation into a chat id:
// itself when it is one ([A-Za-z0-9_-]{1,64}), else "h-" and a hash of it,
// so that clients whose user ids are e-mail addresses or longer still get
// one stable conversation each.
func sessionID(name string) string {
	if messages.ValidChatID(name) {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return "h-" + hex.EncodeToString(sum[:20])
}

// input is a validated request: the session and the text to send it.
type input struct {
	req     completionRequest
	session messages.Session
	text    string
}

// parse reads and checks the request; on failure it has answered.
func parse(w http.ResponseWriter, r *http.Request) (input, bool) {
	if !web.IsJSON(r.Header.Get("Content-Type")) {
		writeError(w, http.StatusUnsupportedMediaType, "invalid_request_error", "unsupported_media_type", "send the body as Content-Type: application/json")
		return input{}, false
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	var in input
	if err := web.DecodeJSON(r.Body, &in.req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "too_large", fmt.Sprintf("request body over %d bytes", MaxBodyBytes))
			return input{}, false
		}
		writeError(w, http.StatusBadRequest, "invalid_request_error", "malformed_json", "body must be one JSON chat-completions request: "+err.Error())
		return input{}, false
	}
	id := r.Header.Get(SessionHeader)
	if id == "" {
		id = in.req.User
	}
	if id == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "missing_session",
			"name the conversation with the \"user\" field or the "+SessionHeader+" header")
		return input{}, false
	}
	s, err := Session(sessionID(id))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "bad_session", err.Error())
		return input{}, false
	}
	in.session = s
	if len(in.req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "no_messages", "messages is empty")
		return input{}, false
	}
	last := in.req.Messages[len(in.req.Messages)-1]
	if last.Role != "user" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "last_not_user",
			fmt.Sprintf("the last message must be the user's (got role %q): hermesd answers it with the session's own history", last.Role))
		return input{}, false
	}
	text, err := last.text()
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "bad_content", err.Error())
		return input{}, false
	}
	if strings.TrimSpace(text) == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "empty_text", "the last user message has no text")
		return input{}, false
	}
	in.text = text
	return in, true
}

func (a *Adapter) handleCompletions(w http.ResponseWriter, r *http.Request, timeout time.Duration) {
	in, ok := parse(w, r)
	if !ok {
		return
	}
	inbound := a.in.Load()
	if inbound == nil {
		writeError(w, http.StatusServiceUnavailable, "server_error", "not_ready", "hermesd is not accepting messages")
		return
	}
	msgID := fmt.Sprintf("%s-m%d", a.prefix, a.seq.Add(1))
	wt := a.wait(in.session.Key(), msgID)
	defer a.forget(msgID)
	err := (*inbound)(r.Context(), &messages.UserMessage{
		SessionKey: in.session.Key(), MessageId: msgID, SenderId: in.session.ChatID(), SenderName: "api",
		Text: in.text, ReceivedUnixMs: time.Now().UnixMilli(),
	})
	if err != nil {
		if errors.Is(err, platforms.ErrTooLarge) {
			writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "too_large", err.Error())
			return
		}
		a.log.Warn("api message not accepted", "session", in.session.Key(), "err", err)
		writeError(w, http.StatusServiceUnavailable, "server_error", "not_accepted", err.Error())
		return
	}
	model := in.req.Model
	if model == "" {
		model = a.model
	}
	ans := answer{id: "chatcmpl-" + msgID, model: model, created: time.Now().Unix()}
	t := time.NewTimer(timeout)
	defer t.Stop()
	if in.req.Stream {
		a.stream(w, r, wt, &ans, in.req.StreamOptions != nil && in.req.StreamOptions.IncludeUsage, t.C)
		return
	}
	for {
		select {
		case ev, open := <-wt.ch:
			if !open {
				if wt.overflow {
					writeError(w, http.StatusServiceUnavailable, "server_error", "overflow", "the answer outran this request; it is in the session's history")
					return
				}
				web.WriteJSON(w, http.StatusOK, ans.completion())
				return
			}
			if ev.delivery != nil {
				ans.add(ev.delivery)
			}
		case <-t.C:
			writeError(w, http.StatusGatewayTimeout, "server_error", "timeout",
				fmt.Sprintf("no complete answer within %s; the turn goes on and its answer is in the session's history", timeout))
			return
		case <-r.Context().Done():
			return
		}
	}
}

// answer gathers the deliveries of one turn.
type answer struct {
	id, model string
	created   int64
	text      strings.Builder
	audio     *outputAudio
	usage     usage
	// current is what the stream has sent of the reply being written;
	// sentAny is set once the stream has sent any text.
	current string
	sentAny bool
	// toolRan is set when a draft named a tool: the model's next words
	// start a new segment of the stream.
	toolRan bool
	// draftID is the draft being followed.
	draftID string
}

// add takes one delivery and returns the text it adds (with the blank
// line that separates it from an earlier reply) and its audio, if any.
func (a *answer) add(d *messages.Delivery) (string, *outputAudio) {
	a.usage.PromptTokens += d.GetPromptTokens()
	a.usage.CompletionTokens += d.GetCompletionTokens()
	a.usage.TotalTokens = a.usage.PromptTokens + a.usage.CompletionTokens
	if d.GetKind() == messages.DeliveryKind_DELIVERY_KIND_VOICE {
		if len(d.GetAudio()) == 0 {
			return "", nil
		}
		// The speech says the turn's text reply, which came before it.
		transcript := d.GetText()
		if transcript == "" {
			transcript = a.text.String()
		}
		a.audio = &outputAudio{
			ID: a.id + "-audio", Data: base64.StdEncoding.EncodeToString(d.GetAudio()),
			ExpiresAt: time.Now().Add(time.Hour).Unix(), Transcript: transcript,
		}
		return "", a.audio
	}
	add := d.GetText()
	if add == "" {
		return "", nil
	}
	if a.text.Len() > 0 {
		add = "\n\n" + add
	}
	a.text.WriteString(add)
	return add, nil
}

// fromDraft returns what a draft adds to the stream: the text beyond what
// was already sent of the reply being written. The stream only grows, so a
// draft that does not extend it (the model's words before a tool call,
// followed by a new answer) adds nothing until the reply itself.
func (a *answer) fromDraft(d *messages.Draft) string {
	if d.GetId() != a.draftID {
		// Another reply (an interrupt merged this request into a new
		// turn): a new segment.
		a.draftID, a.current, a.toolRan = d.GetId(), "", false
	}
	if d.GetCancelled() {
		a.current = ""
		return ""
	}
	text := d.GetText()
	if d.GetTool() != "" {
		a.toolRan = true
	}
	if a.toolRan && d.GetTool() == "" && !strings.HasPrefix(text, a.current) {
		// The model writes again after its tools: a new segment.
		a.current, a.toolRan = "", false
	}
	if len(text) <= len(a.current) || !strings.HasPrefix(text, a.current) {
		return ""
	}
	add := text[len(a.current):]
	if a.current == "" && a.sentAny {
		add = "\n\n" + add
	}
	a.current, a.sentAny = text, true
	return add
}

// streamed takes a delivery of a streamed answer and returns the text it
// adds to the stream and its audio: the rest of the reply its drafts began,
// or, when the drafts went another way, the whole reply after a blank line.
func (a *answer) streamed(d *messages.Delivery) (string, *outputAudio) {
	if _, audio := a.add(d); audio != nil {
		return "", audio
	}
	text := d.GetText()
	cur := a.current
	a.current, a.toolRan = "", false
	if text == "" {
		return "", nil
	}
	var add string
	switch {
	case cur != "" && strings.HasPrefix(text, cur):
		add = text[len(cur):]
	case a.sentAny:
		add = "\n\n" + text
	default:
		add = text
	}
	a.sentAny = true
	return add, nil
}

func (a *answer) completion() completion {
	c := completion{ID: a.id, Object: "chat.completion", Created: a.created, Model: a.model,
		Choices: []choice{{Message: outputMessage{Role: "assistant", Content: a.text.String(), Audio: a.audio}, FinishReason: "stop"}}}
	u := a.usage
	c.Usage = &u
	return c
}

func (a *answer) chunk(d delta, finish string) chunk {
	c := chunk{ID: a.id, Object: "chat.completion.chunk", Created: a.created, Model: a.model,
		Choices: []chunkChoice{{Delta: d}}}
	if finish != "" {
		c.Choices[0].FinishReason = &finish
	}
	return c
}

// streamWriteTimeout bounds one write of a streamed answer: a client that
// stops reading is cut off rather than holding a goroutine.
const streamWriteTimeout = 30 * time.Second

// stream answers as server-sent events in OpenAI's chunk shape, ending
// with data: [DONE].
func (a *Adapter) stream(w http.ResponseWriter, r *http.Request, wt *waiter, ans *answer, includeUsage bool, timeout <-chan time.Time) {
	rc := http.NewResponseController(w)
	send := func(v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	empty := ""
	if !send(ans.chunk(delta{Role: "assistant", Content: &empty}, "")) {
		return
	}
	for {
		select {
		case ev, open := <-wt.ch:
			if !open {
				if wt.overflow {
					var b errorBody
					b.Error.Message, b.Error.Type, b.Error.Code = "the answer outran this stream; it is in the session's history", "server_error", "overflow"
					send(b)
					return
				}
				if !send(ans.chunk(delta{}, "stop")) {
					return
				}
				if includeUsage {
					u := ans.usage
					if !send(chunk{ID: ans.id, Object: "chat.completion.chunk", Created: ans.created, Model: ans.model, Choices: []chunkChoice{}, Usage: &u}) {
						return
					}
				}
				_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
				_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
				_ = rc.Flush()
				return
			}
			var text string
			var audio *outputAudio
			if ev.draft != nil {
				text = ans.fromDraft(ev.draft)
			} else {
				text, audio = ans.streamed(ev.delivery)
			}
			if text == "" && audio == nil {
				continue
			}
			dl := delta{Audio: audio}
			if text != "" {
				dl.Content = &text
			}
			if !send(ans.chunk(dl, "")) {
				return
			}
		case <-timeout:
			var b errorBody
			b.Error.Message, b.Error.Type, b.Error.Code = "no complete answer in time; the turn goes on and its answer is in the session's history", "server_error", "timeout"
			send(b)
			return
		case <-r.Context().Done():
			return
		}
	}
}
