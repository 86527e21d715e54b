package daemon

import (
	"fmt"

	"github.com/hermesd/hermesd/messages"

	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/platforms/discord"
	"github.com/hermesd/hermesd/stt"
)

// discordAdapter builds the Discord adapter when its token is set.
func (d *Daemon) discordAdapter(gate platforms.Gate, tr *stt.Client) ([]platforms.Adapter, error) {
	if d.cfg.DiscordToken == "" {
		return nil, nil
	}
	// The adapter adds platform=discord to its logger itself.
	deps := discord.Deps{Gate: gate, Log: d.log, Dedup: inboxDedup{d.store}, Media: d.media, Drafts: d.store}
	deps.OnAPIError, deps.OnRateLimited = d.apiHooks(messages.Discord)
	if tr != nil {
		deps.Transcriber = tr
	}
	requireMention := d.cfg.DiscordRequireMention
	a, err := discord.New(discord.Config{
		Token:                 d.cfg.DiscordToken,
		APIURL:                d.cfg.DiscordAPIURL,
		RequireMention:        &requireMention,
		FreeResponseChannels:  d.cfg.DiscordFreeResponseChannels,
		AutoThread:            d.cfg.DiscordAutoThread,
		NoThreadChannels:      d.cfg.DiscordNoThreadChannels,
		SharedChannelSessions: !d.cfg.DiscordGroupSessionsPerUser,
	}, deps)
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	if d.cfg.Cluster.On {
		// One member holds the gateway (daemon/poller.go); any sends.
		return []platforms.Adapter{newElectedDiscord(a, d.store, d.log)}, nil
	}
	return []platforms.Adapter{a}, nil
}
