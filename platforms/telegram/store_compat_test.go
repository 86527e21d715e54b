package telegram_test

import (
	"github.com/hermesd/hermesd/access"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/platforms/telegram"
	sqlstore "github.com/hermesd/hermesd/store"
	"github.com/hermesd/hermesd/stt"
)

// hermesd's own store, speech-to-text client and gate plug straight in.
var (
	_ telegram.Store       = (*sqlstore.Store)(nil)
	_ telegram.Transcriber = (*stt.Client)(nil)
	_ platforms.Gate       = (*access.Gate)(nil)
)
