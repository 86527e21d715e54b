package inspect

import (
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"time"
)

//go:embed page/status.html
var page embed.FS

// DefaultLimit is how many actors GET /api/actors returns when no limit is
// given; MaxLimit is the most it returns at once.
const (
	DefaultLimit = 500
	MaxLimit     = 5000
)

// API serves the inspection endpoints: GET /api/actors, GET /api/status and
// the status page. The daemon builds one and registers its handlers.
type API struct {
	Tree   *Tree
	Recent *Recent
	// Started is when the daemon started.
	Started time.Time
	// Platforms reports each running platform's health; nil means none.
	Platforms func() []PlatformStatus
	// RunningTurns returns the turns running now; nil counts live turn
	// actors in the tree.
	RunningTurns func() int64
	// Refusals returns the requests refused for lack of identity so far.
	Refusals func() uint64
	// MCP reports each configured MCP server's health; nil means none.
	MCP func() []MCPStatus
	// Cluster reports this member in cluster mode; nil on a single node.
	Cluster func() *ClusterStatus
}

// ClusterStatus is this member of a cluster as the status API shows it
// (the sessions it holds, with lease epochs, are at /api/cluster).
type ClusterStatus struct {
	Member       string   `json:"member"`
	Members      []string `json:"members"`
	SessionsHeld int      `json:"sessions_held"`
}

// MCPStatus is one MCP server's health as the status API shows it.
type MCPStatus struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	Connected bool   `json:"connected"`
	Tools     int    `json:"tools"`
	Restarts  int    `json:"restarts"`
	LastError string `json:"last_error,omitempty"`
}

// PlatformStatus is one platform's health as the status API shows it.
type PlatformStatus struct {
	Platform string `json:"platform"`
	// ReportsHealth is false for adapters that do not track their
	// connection (they are running, nothing more is known).
	ReportsHealth bool   `json:"reports_health"`
	Connected     bool   `json:"connected"`
	LastError     string `json:"last_error,omitempty"`
	// Standby: another cluster member takes this platform's updates in
	// (platforms.Health.Standby); not a fault.
	Standby bool `json:"standby,omitempty"`
}

// Status is the body of GET /api/status.
type Status struct {
	Started          time.Time        `json:"started"`
	UptimeSeconds    float64          `json:"uptime_seconds"`
	ActorsTotal      int64            `json:"actors_total"`
	Actors           []KindCount      `json:"actors"`
	SessionsLive     int64            `json:"sessions_live"`
	TurnsRunning     int64            `json:"turns_running"`
	Platforms        []PlatformStatus `json:"platforms"`
	MCP              []MCPStatus      `json:"mcp"`
	Cluster          *ClusterStatus   `json:"cluster,omitempty"`
	IdentityRefusals uint64           `json:"identity_refusals"`
	RecentErrors     []LogEntry       `json:"recent_errors"`
	Goroutines       int              `json:"goroutines"`
}

// HandleActors serves GET /api/actors: live actors, paginated.
//
//	?session=<key>   one session's actors (the session and everything below it)
//	?shared=1        actors bound to no session (router, outboxes, TTS)
//	?kind=<kind>     only actors of that kind (session, turn, tool, …)
//	?search=<text>   only sessions whose key contains text
//	?subtree=1       each session actor carries its descendants as children
//	?offset=N&limit=M  paging (limit defaults to 500, at most 5000)
func (a *API) HandleActors(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := Query{Session: v.Get("session"), Kind: v.Get("kind"), Search: v.Get("search"), Limit: DefaultLimit}
	var err error
	if q.Shared, err = parseBool(v.Get("shared")); err != nil {
		writeError(w, http.StatusBadRequest, "bad_shared", err.Error())
		return
	}
	if q.Subtree, err = parseBool(v.Get("subtree")); err != nil {
		writeError(w, http.StatusBadRequest, "bad_subtree", err.Error())
		return
	}
	if s := v.Get("offset"); s != "" {
		if q.Offset, err = strconv.Atoi(s); err != nil || q.Offset < 0 {
			writeError(w, http.StatusBadRequest, "bad_offset", "offset must be a number ≥ 0")
			return
		}
	}
	if s := v.Get("limit"); s != "" {
		if q.Limit, err = strconv.Atoi(s); err != nil || q.Limit < 1 || q.Limit > MaxLimit {
			writeError(w, http.StatusBadRequest, "bad_limit", fmt.Sprintf("limit must be a number from 1 to %d", MaxLimit))
			return
		}
	}
	writeJSON(w, a.Tree.Actors(q))
}

// HandleStatus serves GET /api/status: uptime, actors by kind, sessions,
// turns, platforms' health, recent errors and identity refusals.
func (a *API) HandleStatus(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, a.Status())
}

// Status assembles the body of GET /api/status.
func (a *API) Status() Status {
	now := time.Now()
	st := Status{
		Started: a.Started, UptimeSeconds: now.Sub(a.Started).Seconds(),
		Actors: a.Tree.Counts(), Platforms: []PlatformStatus{}, MCP: []MCPStatus{}, RecentErrors: []LogEntry{},
		Goroutines: runtime.NumGoroutine(),
	}
	for _, k := range st.Actors {
		st.ActorsTotal += k.Live
		switch k.Kind {
		case kindSession:
			st.SessionsLive = k.Live
		case kindTurn:
			st.TurnsRunning = k.Live
		}
	}
	if a.RunningTurns != nil {
		st.TurnsRunning = a.RunningTurns()
	}
	if a.Platforms != nil {
		st.Platforms = append(st.Platforms, a.Platforms()...)
	}
	if a.Refusals != nil {
		st.IdentityRefusals = a.Refusals()
	}
	if a.MCP != nil {
		st.MCP = append(st.MCP, a.MCP()...)
	}
	if a.Cluster != nil {
		st.Cluster = a.Cluster()
	}
	if a.Recent != nil {
		st.RecentErrors = a.Recent.Entries(50)
	}
	return st
}

// HandlePage serves the status page: plain HTML, CSS and JS that poll the
// JSON API.
func (a *API) HandlePage(w http.ResponseWriter, r *http.Request) {
	b, err := page.ReadFile("page/status.html")
	if err != nil {
		http.Error(w, "status page missing from the binary", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'")
	_, _ = w.Write(b)
}

func parseBool(s string) (bool, error) {
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("%q is not a boolean (use 1 or 0)", s)
	}
	return b, nil
}

// apiError is the body of every error answer, as in the rest of the API:
// {"error": {"code", "message"}}.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	var e apiError
	e.Error.Code, e.Error.Message = code, msg
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(e)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}
