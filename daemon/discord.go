package daemon

import (
	"github.com/hermesd/hermesd/access"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/stt"
)

// discordAdapter builds the Discord adapter when its token is set.
func (d *Daemon) discordAdapter(gate *access.Gate, tr *stt.Client) ([]platforms.Adapter, error) {
	return nil, nil
}
