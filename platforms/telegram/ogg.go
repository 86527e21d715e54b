package telegram

import (
	"math"

	"github.com/hermesd/hermesd/audio"
)

// sniffAudio tells what audio really is, whatever the Delivery claims: a
// voice bubble is only ever made from bytes that are Ogg/Opus. The bytes
// are judged by audio.Sniff, the one sniffer hermesd has.
func sniffAudio(b []byte) string {
	switch audio.Sniff(b) {
	case audio.ContainerOggOpus:
		return "ogg/opus"
	case audio.ContainerMP3:
		return "mp3"
	}
	return ""
}

// oggOpusSeconds is the duration of an Ogg/Opus stream (last granule less
// the pre-skip); 0 if it cannot tell.
func oggOpusSeconds(b []byte) float64 {
	d, err := audio.OggOpusDuration(b)
	if err != nil {
		return 0
	}
	return d.Seconds()
}

// ceilSeconds is the duration Telegram wants: whole seconds, rounded up, at
// least one for any sound.
func ceilSeconds(s float64) int {
	if s <= 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		return 0
	}
	return int(math.Ceil(s))
}
