package actors

import (
	"context"
	"sort"
	"strings"
	"time"
)

// SessionInfo is what the inspection API shows about one live session: no
// message content.
type SessionInfo struct {
	Key         string    `json:"key"`
	Platform    string    `json:"platform"`
	LastActive  time.Time `json:"last_active"`
	Passivating bool      `json:"passivating,omitempty"`
	// LeaseEpoch is the epoch of the lease the session holds (cluster mode
	// with leases; 0 otherwise).
	LeaseEpoch uint64 `json:"lease_epoch,omitempty"`
}

// listSessions asks a router shard for its live sessions whose key
// contains Search; Respond carries a *SessionList. Runtime.Sessions merges
// the shards and pages the result.
type listSessions struct {
	Search string
}

// SessionList is a page of live sessions.
type SessionList struct {
	Total    int           `json:"total"`
	Sessions []SessionInfo `json:"sessions"`
}

func (r *router) list(q *listSessions) *SessionList {
	out := &SessionList{}
	for k, e := range r.sessions {
		if q.Search != "" && !strings.Contains(k, q.Search) {
			continue
		}
		platform, _, _ := strings.Cut(k, ":")
		out.Sessions = append(out.Sessions, SessionInfo{Key: k, Platform: platform, LastActive: time.Unix(0, e.last), Passivating: e.stopping})
	}
	out.Total = len(out.Sessions)
	return out
}

// Sessions lists live sessions (search by key substring, paginated).
func (rt *Runtime) Sessions(ctx context.Context, search string, offset, limit int) (*SessionList, error) {
	timeout := 5 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	// Each shard lists its matching keys; the page is cut from the merge.
	var all []SessionInfo
	if rt.placement != nil {
		all = rt.grains.list(search) // the sessions this member holds
	}
	for _, r := range rt.routers {
		res, err := rt.sys.Root.RequestFuture(r, &listSessions{Search: search}, timeout).Result()
		if err != nil {
			return nil, err
		}
		all = append(all, res.(*SessionList).Sessions...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Key < all[j].Key })
	out := &SessionList{Total: len(all)}
	if offset < len(all) {
		all = all[offset:]
	} else {
		all = nil
	}
	if limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	out.Sessions = all
	return out, nil
}
