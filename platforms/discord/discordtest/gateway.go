package discordtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// HeartbeatInterval is what HELLO announces, in milliseconds (Discord's own
// value). The client heartbeats once at connect and then every interval.
const HeartbeatInterval = 41250

// frame is one dispatched event. seq is 0 until it has been written to a
// connection; a frame dispatched while no client is connected waits for the
// next READY or RESUMED.
type frame struct {
	t   string
	d   json.RawMessage
	seq int64
}

// maxFrames bounds the replay log of dispatched events.
const maxFrames = 8192

// trimDelivered drops up to n of the oldest frames that were already written.
func trimDelivered(frames []*frame, n int) []*frame {
	kept := frames[:0]
	for _, f := range frames {
		if n > 0 && f.seq != 0 {
			n--
			continue
		}
		kept = append(kept, f)
	}
	clear(frames[len(kept):])
	return kept
}

type gatewayPayload struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d,omitempty"`
	S  int64           `json:"s,omitempty"`
	T  string          `json:"t,omitempty"`
}

// serveWS is the gateway: HELLO first, then IDENTIFY → READY, RESUME →
// RESUMED (answering a resume is mandatory: discordgo otherwise blocks in
// Open holding its session lock), heartbeat → ACK.
func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	c, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade already answered the request
	}
	s.mu.Lock()
	if s.conn != nil {
		// A new connection replaces the old one, as on Discord.
		_ = s.conn.UnderlyingConn().Close()
	}
	s.conn, s.connReady = c, false
	s.conns[c] = struct{}{}
	s.writeLocked(c, map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": HeartbeatInterval}})
	s.mu.Unlock()

	for {
		_, data, err := c.ReadMessage()
		if err != nil {
			break
		}
		var p gatewayPayload
		if err := json.Unmarshal(data, &p); err != nil {
			continue
		}
		s.handleOp(c, p)
	}

	s.mu.Lock()
	delete(s.conns, c)
	if s.conn == c {
		s.conn, s.connReady = nil, false
		s.notifyLocked()
	}
	s.mu.Unlock()
	_ = c.Close()
}

func (s *Server) handleOp(c *websocket.Conn, p gatewayPayload) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != c {
		return // a stale connection's last words
	}
	switch p.Op {
	case 1: // heartbeat
		s.writeLocked(c, map[string]any{"op": 11})
	case 2: // identify
		if s.refuseCode != 0 {
			_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			_ = c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(s.refuseCode, s.refuseText))
			_ = c.UnderlyingConn().Close()
			return
		}
		var id struct {
			Intents int64 `json:"intents"`
		}
		_ = json.Unmarshal(p.D, &id)
		s.identifies++
		s.intents = id.Intents
		s.sessionID = fmt.Sprintf("session-%d", s.identifies)
		ready := map[string]any{
			"v": 9, "session_id": s.sessionID, "user": botUser(),
			"guilds": []any{}, "private_channels": []any{},
			"application": map[string]any{"id": BotID},
		}
		raw, _ := json.Marshal(ready)
		s.sendFrameLocked(c, &frame{t: "READY", d: raw})
		s.connReady = true
		for _, f := range s.frames {
			if f.seq == 0 {
				s.sendFrameLocked(c, f)
			}
		}
		s.notifyLocked()
	case 6: // resume
		var res struct {
			SessionID string `json:"session_id"`
			Seq       int64  `json:"seq"`
		}
		_ = json.Unmarshal(p.D, &res)
		if res.SessionID != s.sessionID {
			// Invalid session: the client must identify again.
			s.writeLocked(c, map[string]any{"op": 9, "d": false})
			return
		}
		s.resumes++
		s.sendFrameLocked(c, &frame{t: "RESUMED", d: json.RawMessage(`{}`)})
		s.connReady = true
		for _, f := range s.frames {
			if s.replayAll || f.seq == 0 || f.seq > res.Seq {
				s.sendFrameLocked(c, f)
			}
		}
		s.notifyLocked()
	}
}

// sendFrameLocked writes f as a dispatch with the next sequence number.
// s.mu must be held.
func (s *Server) sendFrameLocked(c *websocket.Conn, f *frame) {
	s.seq++
	f.seq = s.seq
	s.writeLocked(c, gatewayPayload{Op: 0, T: f.t, S: f.seq, D: f.d})
}

// writeLocked writes one JSON frame; a failed write drops the connection.
// s.mu must be held.
func (s *Server) writeLocked(c *websocket.Conn, v any) {
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := c.WriteJSON(v); err != nil {
		_ = c.UnderlyingConn().Close()
		if s.conn == c {
			s.conn, s.connReady = nil, false
		}
	}
}

// Dispatch sends a gateway event (op 0) of type t with payload d, numbered by
// the fake's own sequence counter. While no client is connected the event is
// kept and delivered after the next READY or RESUMED.
func (s *Server) Dispatch(t string, d any) error {
	raw, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("discordtest: marshal %s: %w", t, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f := &frame{t: t, d: raw}
	s.frames = append(s.frames, f)
	if len(s.frames) > maxFrames && !s.replayAll {
		// Forget the oldest delivered events so a long load run stays small;
		// a resume only needs the recent ones.
		s.frames = trimDelivered(s.frames, maxFrames/2)
	}
	if s.conn != nil && s.connReady {
		s.sendFrameLocked(s.conn, f)
	}
	s.notifyLocked()
	return nil
}

// DropSocket cuts the gateway connection without a close frame, as a network
// failure would. discordgo then reconnects and resumes.
func (s *Server) DropSocket() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		_ = s.conn.UnderlyingConn().Close()
		s.conn, s.connReady = nil, false
		s.notifyLocked()
	}
}

// ReplayAllOnResume makes every later RESUME replay every event ever
// dispatched, not only the ones the client missed: an at-least-once gateway,
// to prove the adapter never answers a message twice.
func (s *Server) ReplayAllOnResume(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replayAll = on
}

// RefuseIdentify makes the gateway answer every IDENTIFY by closing with
// code and reason, as Discord does for a bad token (4004) or a privileged
// intent the bot may not use (4014, "Disallowed intent(s)").
func (s *Server) RefuseIdentify(code int, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseCode, s.refuseText = code, reason
}

// Connected reports whether a client is connected and past READY/RESUMED.
func (s *Server) Connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn != nil && s.connReady
}

// Identifies counts IDENTIFY handshakes (new gateway sessions).
func (s *Server) Identifies() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.identifies
}

// Resumes counts successful RESUME handshakes.
func (s *Server) Resumes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resumes
}

// Intents returns the intents of the last IDENTIFY.
func (s *Server) Intents() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.intents
}

// WaitConnected waits until a client is connected and past READY/RESUMED.
func (s *Server) WaitConnected(tb testing.TB) {
	tb.Helper()
	s.Await(tb, "a gateway connection", s.Connected)
}

// WaitResumes waits until at least n RESUME handshakes succeeded and the
// client is connected again.
func (s *Server) WaitResumes(tb testing.TB, n int) {
	tb.Helper()
	s.Await(tb, fmt.Sprintf("%d resumes", n), func() bool { return s.Resumes() >= n && s.Connected() })
}
