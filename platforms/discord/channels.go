package discord

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/bwmarrin/discordgo"
)

// channelInfo is what the adapter needs to know about a guild channel: a
// thread (and its parent and creator) or not. It never changes for a given
// id, so it is cached for good.
type channelInfo struct {
	thread   bool
	parentID string
	ownerID  string
}

// maxCachedChannels bounds channelCache; past it the cache starts over.
const maxCachedChannels = 50_000

// channelCache remembers channelInfo by channel id.
type channelCache struct {
	mu sync.Mutex
	m  map[string]channelInfo
}

func (c *channelCache) get(id string) (channelInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	info, ok := c.m[id]
	return info, ok
}

func (c *channelCache) put(id string, info channelInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedChannels {
		c.m = make(map[string]channelInfo)
	}
	c.m[id] = info
}

// channelInfo looks a guild channel up: the cache, then discordgo's state
// (filled from GUILD_CREATE and THREAD_CREATE), then GET /channels/{id}.
func (a *Adapter) channelInfo(ctx context.Context, id string) (channelInfo, error) {
	if info, ok := a.chans.get(id); ok {
		return info, nil
	}
	c, err := a.dg.State.Channel(id)
	if err != nil {
		raw, err := a.do(ctx, request{op: "look up channel", method: http.MethodGet, url: discordgo.EndpointChannel(id)})
		if err != nil {
			return channelInfo{}, err
		}
		if err := discordgo.Unmarshal(raw, &c); err != nil || c == nil {
			return channelInfo{}, fmt.Errorf("discord: look up channel %s: bad answer %.200q", id, raw)
		}
	}
	info := channelInfo{thread: c.IsThread(), parentID: c.ParentID, ownerID: c.OwnerID}
	if info.thread && info.parentID == "" {
		return channelInfo{}, fmt.Errorf("discord: look up channel %s: thread without parent", id)
	}
	a.chans.put(id, info)
	return info, nil
}
