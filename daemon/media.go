package daemon

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/hermesd/hermesd/media"
)

// mediaIngester opens HERMES_HOME/media, where the photos and documents
// users send are kept by content, and the ingester every adapter hands
// them to.
func (d *Daemon) mediaIngester() (*media.Ingester, error) {
	st, err := media.NewStore(filepath.Join(d.cfg.Home, "media"))
	if err != nil {
		return nil, fmt.Errorf("media: %w", err)
	}
	c := d.cfg.Media
	lim := media.Limits{
		MaxBytes:         c.MaxBytes,
		ImageMaxSide:     c.ImageMaxSide,
		ImageMaxBytes:    c.ImageMaxBytes,
		DocumentMaxChars: c.DocumentMaxChars,
		PDFTimeout:       30 * time.Second,
	}
	return media.NewIngester(st, lim, d.log.With("component", "media")), nil
}
