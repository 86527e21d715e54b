package actors

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/messages"
)

// Approvals are messages, end to end. A tool call that needs approval (a
// tools.Tool with Approve) sends approvalRequest to its session and waits
// as a state, not on a channel; the session asks the chat and keeps the
// request with a timer; /approve, /deny, the timer or /stop answers the
// tool actor with approvalAnswer. Whoever can write in the chat can answer
// (the platform gate admits only allowed users), and only in that chat: a
// request lives in its own session.

// approvalRequest asks the session to put a tool call to its chat.
// Sender: a tool actor (the request's sender gets the answer). Receiver: the
// tool's session.
type approvalRequest struct {
	turn    uint64
	tool    string
	prompt  string
	timeout time.Duration
}

// approvalAnswer is the chat's decision. Sender: the session. Receiver: the
// tool actor that asked.
type approvalAnswer struct {
	approved bool
	why      string
}

// approvalExpired is a request's timer firing. Sender: the timer.
// Receiver: the session.
type approvalExpired struct{ id int }

// pendingApproval is one request waiting for the chat.
type pendingApproval struct {
	id      int
	turn    uint64
	tool    *actor.PID
	prompt  string
	timeout time.Duration
	timer   *time.Timer
}

// approvals are a session's pending requests; the zero value is empty.
type approvals struct {
	seq     int
	pending map[int]*pendingApproval
}

// handleApprovalRequest asks the chat and arms the request's timer.
func (a *session) handleApprovalRequest(c actor.Context, m *approvalRequest) {
	tool := c.Sender()
	if tool == nil {
		return
	}
	if !a.turnLive(m.turn) {
		c.Send(tool, &approvalAnswer{why: "the reply it belonged to was cancelled"})
		return
	}
	ap := &a.approvals
	if ap.pending == nil {
		ap.pending = map[int]*pendingApproval{}
	}
	ap.seq++
	p := &pendingApproval{id: ap.seq, turn: m.turn, tool: tool, prompt: m.prompt, timeout: m.timeout}
	self, root := c.Self(), c.ActorSystem().Root
	p.timer = time.AfterFunc(m.timeout, func() { root.Send(self, &approvalExpired{id: p.id}) })
	ap.pending[p.id] = p
	text := fmt.Sprintf("🔐 Approval needed (#%d, %s): %s\nReply /approve %d or /deny %d — denied automatically in %s.",
		p.id, m.tool, m.prompt, p.id, p.id, roundDuration(m.timeout))
	var ids []string
	if a.turn != nil && a.turn.id == m.turn {
		ids = answers(a.turn.inputs)
	}
	a.settle(c, Settlement{Replies: []*messages.Delivery{{Kind: messages.DeliveryKind_DELIVERY_KIND_TEXT, Text: text, Answers: ids, Origin: "approval"}}})
}

// turnLive reports whether the turn (or background child) with id still
// runs: a request of a cancelled turn is not worth asking.
func (a *session) turnLive(id uint64) bool {
	if a.turn != nil && a.turn.id == id {
		return true
	}
	_, ok := a.bg[id]
	return ok
}

// answerApproval handles /approve and /deny [n].
func (a *session) answerApproval(c actor.Context, m *messages.UserMessage, approve bool, arg string) {
	ap := &a.approvals
	verb := "deny"
	if approve {
		verb = "approve"
	}
	if len(ap.pending) == 0 {
		a.reply(c, m, "Nothing is waiting for approval.")
		return
	}
	var p *pendingApproval
	if arg = strings.TrimPrefix(strings.TrimSpace(arg), "#"); arg != "" {
		id, err := strconv.Atoi(arg)
		if err != nil || ap.pending[id] == nil {
			a.reply(c, m, fmt.Sprintf("No request #%s is waiting. %s", arg, a.pendingList()))
			return
		}
		p = ap.pending[id]
	} else if len(ap.pending) == 1 {
		for _, only := range ap.pending {
			p = only
		}
	} else {
		a.reply(c, m, fmt.Sprintf("Several requests are waiting; say which: /%s <number>. %s", verb, a.pendingList()))
		return
	}
	p.timer.Stop()
	delete(ap.pending, p.id)
	if !a.turnLive(p.turn) {
		a.reply(c, m, fmt.Sprintf("Request #%d is no longer pending: the reply it belonged to was cancelled.", p.id))
		return
	}
	if approve {
		c.Send(p.tool, &approvalAnswer{approved: true})
		a.reply(c, m, fmt.Sprintf("✅ Approved #%d: %s", p.id, p.prompt))
		return
	}
	c.Send(p.tool, &approvalAnswer{why: "the user denied it"})
	a.reply(c, m, fmt.Sprintf("🚫 Denied #%d: %s", p.id, p.prompt))
}

// pendingList names the waiting requests, oldest first.
func (a *session) pendingList() string {
	ids := make([]int, 0, len(a.approvals.pending))
	for id := range a.approvals.pending {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("#%d %s", id, a.approvals.pending[id].prompt)
	}
	return "Waiting: " + strings.Join(parts, "; ")
}

// handleApprovalExpired denies a request nobody answered, and says so.
func (a *session) handleApprovalExpired(c actor.Context, m *approvalExpired) {
	p := a.approvals.pending[m.id]
	if p == nil {
		return // answered meanwhile
	}
	delete(a.approvals.pending, m.id)
	c.Send(p.tool, &approvalAnswer{why: fmt.Sprintf("nobody approved it within %s", roundDuration(p.timeout))})
	if a.turnLive(p.turn) {
		a.settle(c, Settlement{Replies: []*messages.Delivery{{Kind: messages.DeliveryKind_DELIVERY_KIND_TEXT, Origin: "approval",
			Text: fmt.Sprintf("⌛ Request #%d was not answered in time and was denied: %s", p.id, p.prompt)}}})
	}
}

// denyAllApprovals answers every waiting request with a denial (/stop).
// It returns how many there were.
func (a *session) denyAllApprovals(c actor.Context, why string) int {
	n := len(a.approvals.pending)
	for id, p := range a.approvals.pending {
		p.timer.Stop()
		c.Send(p.tool, &approvalAnswer{why: why})
		delete(a.approvals.pending, id)
	}
	return n
}

// roundDuration prints d to the second, or as it is when shorter.
func roundDuration(d time.Duration) string {
	if d < time.Second {
		return d.String()
	}
	return d.Round(time.Second).String()
}
