package web

// subscriber is one open event stream. Its buffer absorbs bursts; a reader
// too slow to keep up is disconnected (it reconnects and the history is in
// the store) rather than slowing deliveries to everyone else.
type subscriber struct {
	ch      chan Event
	dropped bool
}

const subscriberBuffer = 64

// push queues ev without blocking; called with the adapter's lock held.
func (s *subscriber) push(ev Event) {
	if s.dropped {
		return
	}
	if ev.draft != nil {
		// A draft is superseded by the next one or by its final reply: a
		// reader behind by half the buffer skips it rather than being cut
		// off, and the other half stays free for the replies.
		if len(s.ch) < cap(s.ch)/2 { // room kept for the replies
			s.ch <- ev
		}
		return
	}
	select {
	case s.ch <- ev:
	default:
		s.dropped = true
		close(s.ch)
	}
}

func (a *Adapter) subscribe(chat string) *subscriber {
	s := &subscriber{ch: make(chan Event, subscriberBuffer)}
	a.mu.Lock()
	m := a.subs[chat]
	if m == nil {
		m = make(map[*subscriber]struct{})
		a.subs[chat] = m
	}
	m[s] = struct{}{}
	a.mu.Unlock()
	return s
}

func (a *Adapter) unsubscribe(chat string, s *subscriber) {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := a.subs[chat]
	delete(m, s)
	if len(m) == 0 {
		delete(a.subs, chat)
	}
}
