package inspect

import (
	"slices"
	"strings"
	"time"
)

// Query selects actors from the tree. The zero value lists every actor.
type Query struct {
	// Session, if set, selects the actors bound to that session key: the
	// session actor and everything below it.
	Session string
	// Shared selects the actors bound to no session (router, outboxes, TTS).
	Shared bool
	// Kind, if set, keeps only actors of that kind.
	Kind string
	// Search, if set, keeps only actors whose session key contains it.
	Search string
	// Subtree attaches to each session actor listed its descendants, nested
	// by parent (for a page that shows sessions → turns → tools).
	Subtree bool
	// Offset and Limit page through the result, ordered by session key,
	// then actor id (a parent before its children). Limit 0 means no limit.
	Offset, Limit int
}

// ActorInfo is what the tree shows about one live actor: no message content.
type ActorInfo struct {
	ID      string    `json:"id"`
	Kind    string    `json:"kind"`
	Session string    `json:"session,omitempty"`
	Parent  string    `json:"parent,omitempty"`
	State   string    `json:"state"`
	Mailbox int64     `json:"mailbox"`
	Started time.Time `json:"started"`
	// AgeSeconds is how long the actor has been alive.
	AgeSeconds float64 `json:"age_seconds"`
	// Descendants counts the live actors below a session actor, and Busy
	// reports whether one of them is a turn (sessions only).
	Descendants int  `json:"descendants,omitempty"`
	Busy        bool `json:"busy,omitempty"`
	// Children are the actors directly below this one, when the query asked
	// for subtrees.
	Children []*ActorInfo `json:"children,omitempty"`
}

// Page is one page of a query's result.
type Page struct {
	// Total is the number of actors the query matched, across all pages.
	Total  int          `json:"total"`
	Offset int          `json:"offset"`
	Limit  int          `json:"limit"`
	Actors []*ActorInfo `json:"actors"`
}

// kindSession and kindTurn are the actor kinds the tree knows by name, to
// tell a busy session (one with a live turn) from an idle one. They match
// actors.KindSession and actors.KindTurn.
const (
	kindSession = "session"
	kindTurn    = "turn"
)

// groupRef is a session group that matched a query, and how many of its
// actors did.
type groupRef struct {
	key string
	n   int
}

// Actors answers q. The cost is one pass over the session keys plus a sort
// of those that match (tens of milliseconds for 100,000 sessions), and then
// only the groups on the requested page are copied.
func (t *Tree) Actors(q Query) Page {
	page := Page{Offset: max(q.Offset, 0), Limit: max(q.Limit, 0), Actors: []*ActorInfo{}}
	now := t.now()
	if q.Session != "" || q.Shared {
		// One group: the session's, or "" for the actors bound to none.
		recs := t.snapshot(q.Session, q.Kind)
		page.Total = len(recs)
		for _, r := range window(recs, page.Offset, page.Limit) {
			page.Actors = append(page.Actors, t.info(r, now))
		}
		return page
	}

	refs := t.match(q)
	for _, g := range refs {
		page.Total += g.n
	}
	refs = firstSorted(refs, page.Offset, page.Limit)
	skip := page.Offset
	for _, g := range refs {
		if page.Limit > 0 && len(page.Actors) >= page.Limit {
			break
		}
		if skip >= g.n {
			skip -= g.n
			continue
		}
		all := t.snapshot(g.key, "")
		recs := all
		if q.Kind != "" {
			recs = filterKind(all, q.Kind)
		}
		if skip < len(recs) {
			recs = recs[skip:]
		} else {
			recs = nil
		}
		skip = 0
		for _, r := range recs {
			if page.Limit > 0 && len(page.Actors) >= page.Limit {
				break
			}
			a := t.info(r, now)
			if r.kind.name == kindSession {
				describeSession(a, all, q.Subtree, func(r *record) *ActorInfo { return t.info(r, now) })
			}
			page.Actors = append(page.Actors, a)
		}
	}
	return page
}

// match lists the groups with actors that q selects.
func (t *Tree) match(q Query) []groupRef {
	var kind *kindStats
	if q.Kind != "" {
		t.kindsMu.RLock()
		kind = t.kinds[q.Kind]
		t.kindsMu.RUnlock()
		if kind == nil {
			return nil
		}
	}
	var refs []groupRef
	if q.Search == "" {
		refs = make([]groupRef, 0, t.Len()+1)
	}
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.RLock()
		for key, g := range s.groups {
			if q.Search != "" && !strings.Contains(key, q.Search) {
				continue
			}
			n := len(g.recs)
			if kind != nil {
				n = 0
				for _, r := range g.recs {
					if r.kind == kind {
						n++
					}
				}
			}
			if n > 0 {
				refs = append(refs, groupRef{key, n})
			}
		}
		s.mu.RUnlock()
	}
	return refs
}

// firstSorted returns the groups that hold the actors from offset to
// offset+limit, in key order. A first page needs only the smallest keys:
// they are selected with a bounded heap instead of sorting every key.
func firstSorted(refs []groupRef, offset, limit int) []groupRef {
	cmp := func(a, b groupRef) int { return strings.Compare(a.key, b.key) }
	// Each group holds at least one matching actor, so the page lies within
	// the first offset+limit groups.
	k := offset + limit
	if limit == 0 || k >= len(refs)/8 {
		slices.SortFunc(refs, cmp)
		return refs
	}
	h := make([]groupRef, 0, k) // max-heap on key: h[0] is the largest kept
	for _, r := range refs {
		switch {
		case len(h) < k:
			h = append(h, r)
			siftUp(h, len(h)-1, cmp)
		case cmp(r, h[0]) < 0:
			h[0] = r
			siftDown(h, 0, cmp)
		}
	}
	slices.SortFunc(h, cmp)
	return h
}

func siftUp(h []groupRef, i int, cmp func(a, b groupRef) int) {
	for i > 0 {
		p := (i - 1) / 2
		if cmp(h[i], h[p]) <= 0 {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func siftDown(h []groupRef, i int, cmp func(a, b groupRef) int) {
	for {
		l, big := 2*i+1, i
		if l < len(h) && cmp(h[l], h[big]) > 0 {
			big = l
		}
		if r := l + 1; r < len(h) && cmp(h[r], h[big]) > 0 {
			big = r
		}
		if big == i {
			return
		}
		h[i], h[big] = h[big], h[i]
		i = big
	}
}

// snapshot copies the records of one session (of one kind, if kind is set),
// sorted by actor id so that a parent comes before its children.
func (t *Tree) snapshot(session, kind string) []*record {
	s := t.shardOf(session)
	s.mu.RLock()
	var recs []*record
	if g := s.groups[session]; g != nil {
		recs = make([]*record, 0, len(g.recs))
		for _, r := range g.recs {
			if kind == "" || r.kind.name == kind {
				recs = append(recs, r)
			}
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(recs, func(a, b *record) int { return strings.Compare(a.id, b.id) })
	return recs
}

func filterKind(recs []*record, kind string) []*record {
	out := make([]*record, 0, len(recs))
	for _, r := range recs {
		if r.kind.name == kind {
			out = append(out, r)
		}
	}
	return out
}

func window(recs []*record, offset, limit int) []*record {
	if offset >= len(recs) {
		return nil
	}
	recs = recs[offset:]
	if limit > 0 && len(recs) > limit {
		recs = recs[:limit]
	}
	return recs
}

func (t *Tree) info(r *record, now time.Time) *ActorInfo {
	started := time.Unix(0, r.started)
	return &ActorInfo{
		ID: r.id, Kind: r.kind.name, Session: r.session, Parent: r.parent,
		State: stateName(r.state.Load()), Mailbox: r.depth(),
		Started: started, AgeSeconds: now.Sub(started).Seconds(),
	}
}

// describeSession fills in a session actor's descendants, whether it is
// busy, and (if subtree) its descendants nested by parent. all is the
// session's group sorted by id.
func describeSession(a *ActorInfo, all []*record, subtree bool, info func(*record) *ActorInfo) {
	byID := map[string]*ActorInfo{a.ID: a}
	for _, r := range all {
		if r.id == a.ID {
			continue
		}
		a.Descendants++
		if r.kind.name == kindTurn {
			a.Busy = true
		}
		if !subtree {
			continue
		}
		c := info(r)
		byID[c.ID] = c
		// Sorted by id: a parent is already in byID. An actor whose parent
		// is gone (it is stopping) hangs from the session.
		p := byID[c.Parent]
		if p == nil {
			p = a
		}
		p.Children = append(p.Children, c)
	}
}
