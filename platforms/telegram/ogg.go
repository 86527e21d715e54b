package telegram

import (
	"bytes"
	"encoding/binary"
	"math"
)

// sniffAudio tells what audio really is, whatever the Delivery claims: a
// voice bubble is only ever made from bytes that are Ogg/Opus.
func sniffAudio(b []byte) string {
	switch {
	case isOggOpus(b):
		return "ogg/opus"
	case isMP3(b):
		return "mp3"
	}
	return ""
}

// isOggOpus checks the first Ogg page: the "OggS" capture pattern, stream
// version 0, the beginning-of-stream flag, and an "OpusHead" packet.
func isOggOpus(b []byte) bool {
	if len(b) < 27 || string(b[:4]) != "OggS" || b[4] != 0 || b[5]&0x02 == 0 {
		return false
	}
	n := int(b[26])
	body := 27 + n
	if len(b) < body+19 {
		return false
	}
	return string(b[body:body+8]) == "OpusHead" && b[body+8]>>4 == 0 // version 1 (major 0)
}

// isMP3 recognises an ID3v2 tag or an MPEG audio frame sync.
func isMP3(b []byte) bool {
	if len(b) >= 3 && string(b[:3]) == "ID3" {
		return true
	}
	return len(b) >= 2 && b[0] == 0xFF && b[1]&0xE0 == 0xE0 && b[1]&0x06 != 0
}

// oggOpusSeconds is the duration of an Ogg/Opus stream: the granule position
// of its last page, less the pre-skip, at 48 kHz; 0 if it cannot tell. It
// walks real page headers, never searching for "OggS" inside payloads.
func oggOpusSeconds(b []byte) float64 {
	if !isOggOpus(b) {
		return 0
	}
	head := 27 + int(b[26])
	preSkip := int64(binary.LittleEndian.Uint16(b[head+10:]))
	var granule int64 = -1
	for p := 0; p+27 <= len(b) && bytes.Equal(b[p:p+4], []byte("OggS")); {
		segs := int(b[p+26])
		if p+27+segs > len(b) {
			break
		}
		size := 0
		for _, s := range b[p+27 : p+27+segs] {
			size += int(s)
		}
		if g := int64(binary.LittleEndian.Uint64(b[p+6:])); g >= 0 {
			granule = g
		}
		p += 27 + segs + size
	}
	if granule <= preSkip {
		return 0
	}
	return float64(granule-preSkip) / 48000
}

// ceilSeconds is the duration Telegram wants: whole seconds, rounded up, at
// least one for any sound.
func ceilSeconds(s float64) int {
	if s <= 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		return 0
	}
	return int(math.Ceil(s))
}
