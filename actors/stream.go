package actors

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/platforms"
)

// Streamed replies. A user's turn on a platform that can show drafts asks
// the model for a streamed answer; its draftStream gathers the pieces and
// sends the text so far to the session as draftUpdate, the first at once and
// then at most one per Config.DraftInterval. The session forwards each as a
// messages.Draft through the platform outbox, behind any reply still waiting
// to leave, so a draft never overtakes a final message; the turn's final
// reply names the draft (Delivery.draft_id) and the platform turns the draft
// into it. Drafts are disposable: only the latest of a reply matters, so the
// session and the outbox replace a waiting draft by a newer one.

// defaultDraftInterval spaces the drafts a turn sends its session. The web
// chat shows each one; Telegram and Discord pace further on their own.
const defaultDraftInterval = 50 * time.Millisecond

// draftUpdate is the text so far of a streaming turn, sent to its session.
type draftUpdate struct {
	turn       uint64
	text, tool string
}

// draftStream gathers a turn's streamed pieces. onDelta runs on the model
// call's goroutine, round and running on the turn's, the flush timer on its
// own: everything is behind mu.
type draftStream struct {
	root     *actor.RootContext
	session  *actor.PID
	turn     uint64
	interval time.Duration

	mu       sync.Mutex
	text     strings.Builder
	tool     string
	sentText string
	sentTool string
	last     time.Time
	timer    *time.Timer
	stopped  bool
}

// round starts a new model call: its answer replaces the previous one's
// text (only the last call's text is the reply). The tools shown stay until
// the new answer's first words.
func (d *draftStream) round() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.text.Reset()
}

// onDelta is the model's OnDelta.
func (d *draftStream) onDelta(x model.Delta) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return
	}
	if x.Reset {
		d.text.Reset()
	}
	if x.Text != "" {
		d.text.WriteString(x.Text)
		d.tool = ""
	}
	if x.Tool != "" {
		d.tool = x.Tool
	}
	d.pushLocked()
}

// running shows the tools a turn has started.
func (d *draftStream) running(calls []model.ToolCall) {
	names := make([]string, 0, len(calls))
	for _, c := range calls {
		if !slices.Contains(names, c.Name) {
			names = append(names, c.Name)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return
	}
	d.tool = strings.Join(names, ", ")
	d.pushLocked()
}

// stop ends the stream: the turn's final reply follows.
func (d *draftStream) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = true
	if d.timer != nil {
		d.timer.Stop()
	}
}

// pushLocked sends the state now, or arms the timer for when the interval
// since the last send has passed; d.mu held.
func (d *draftStream) pushLocked() {
	if d.timer != nil {
		return // armed: it sends the latest state
	}
	if wait := d.interval - time.Since(d.last); wait > 0 {
		d.timer = time.AfterFunc(wait, d.fire)
		return
	}
	d.sendLocked()
}

func (d *draftStream) fire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.timer = nil
	if !d.stopped {
		d.sendLocked()
	}
}

// sendLocked sends the state unless it is what was sent last; d.mu held.
func (d *draftStream) sendLocked() {
	text := d.text.String()
	if text == d.sentText && d.tool == d.sentTool {
		return
	}
	if strings.TrimSpace(text) == "" && d.tool == "" {
		return // nothing to show yet
	}
	d.sentText, d.sentTool, d.last = text, d.tool, time.Now()
	d.root.Send(d.session, &draftUpdate{turn: d.turn, text: text, tool: d.tool})
}

// drafts reports whether platform p shows drafts.
func (rt *Runtime) drafts(p messages.Platform) bool {
	_, ok := rt.adapters[p].(platforms.Drafter)
	return ok
}

// streamTurn makes user turn t stream its answer when the session's
// platform shows drafts and the reply will be text (a spoken reply is sent
// whole, as before). It returns the draft id, or "" when t does not stream.
func (a *session) streamTurn(c actor.Context, t *turn, voiceIn bool) string {
	if t.kind != kindTurn || !a.rt.drafts(a.s.Platform()) || a.speaks(voiceIn) {
		return ""
	}
	interval := a.rt.cfg.DraftInterval
	if interval <= 0 {
		interval = defaultDraftInterval
	}
	t.stream = &draftStream{root: c.ActorSystem().Root, session: c.Self(), turn: t.id, interval: interval}
	// Unique per reply, also across restarts (turn ids start again at 1).
	return fmt.Sprintf("%x-%d", time.Now().UnixNano(), t.id)
}

// handleDraft forwards the running turn's text so far to the platform.
func (a *session) handleDraft(c actor.Context, m *draftUpdate) {
	t := a.turn
	if t == nil || t.id != m.turn || t.draftID == "" {
		return // a turn that ended: its final reply is on its way
	}
	t.draftVersion++
	t.held = &messages.Draft{Id: t.draftID, Text: m.text, Tool: m.tool, Version: t.draftVersion,
		Answers: answers(t.inputs), ReplyToId: lastID(t.inputs)}
	a.flushDrafts(c)
}

// flushDrafts sends the running turn's latest draft once no reply recorded
// before it waits to leave (a settlement being written, a voice reply being
// synthesized): a draft never overtakes a final message. Until then only
// the latest draft is kept.
func (a *session) flushDrafts(c actor.Context) {
	t := a.turn
	if t == nil || t.held == nil || len(a.sendQ) > 0 || a.settling > 0 {
		return
	}
	c.Request(a.rt.outbox(a.s.Platform()), t.held)
	t.held = nil
}

// closeDraft ends the draft of turn t, which stopped streaming: a held draft
// is dropped (the final reply replaces it), and when no reply will come the
// platform is told to take the draft down. The notice goes at once: it only
// concerns this draft, queued behind the drafts already sent.
func (a *session) closeDraft(c actor.Context, t *runningTurn, replaced bool) {
	if t == nil || t.draftID == "" {
		return
	}
	t.held = nil
	if !replaced && t.draftVersion > 0 {
		t.draftVersion++
		c.Request(a.rt.outbox(a.s.Platform()), &messages.Draft{Id: t.draftID, Version: t.draftVersion, Cancelled: true,
			Answers: answers(t.inputs), ReplyToId: lastID(t.inputs)})
	}
}

// finalFor marks reply d as the end of turn t's draft.
func finalFor(t *runningTurn, d *messages.Delivery) {
	if t != nil && t.draftVersion > 0 {
		d.DraftId = t.draftID
	}
}
