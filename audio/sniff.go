package audio

import (
	"bytes"
)

// Container is what a piece of audio is, judged from its bytes alone.
type Container int

// Containers Sniff tells apart. Only ContainerOggOpus may ever be sent as a
// voice note; everything else is a file at best.
const (
	// ContainerUnknown is anything else, including truncated or corrupt
	// headers: never sent as audio.
	ContainerUnknown Container = iota
	// ContainerOggOpus is an Ogg stream whose first page carries OpusHead.
	ContainerOggOpus
	// ContainerOggVorbis is an Ogg stream whose first packet is a Vorbis
	// identification header: it plays nowhere as a voice note.
	ContainerOggVorbis
	// ContainerMP3 is MPEG audio layer III, with or without an ID3v2 tag.
	ContainerMP3
	// ContainerWAV is a RIFF/WAVE file.
	ContainerWAV
)

// String names the container for errors and logs.
func (c Container) String() string {
	switch c {
	case ContainerOggOpus:
		return "ogg/opus"
	case ContainerOggVorbis:
		return "ogg/vorbis"
	case ContainerMP3:
		return "mp3"
	case ContainerWAV:
		return "wav"
	}
	return "unknown"
}

// Sniff tells Ogg/Opus, Ogg/Vorbis, MP3 and WAV apart by their bytes, never
// by a file name or a Content-Type a provider claims. For Ogg it parses the
// whole first page and checks its CRC: a stream is Ogg/Opus only if that BOS
// page holds exactly a valid OpusHead. For MP3 it wants an ID3v2 tag or a
// layer III frame header (and, when the data goes on, a second frame header
// where the first frame ends).
func Sniff(b []byte) Container {
	switch {
	case bytes.HasPrefix(b, []byte("OggS")):
		return sniffOgg(b)
	case len(b) >= 12 && string(b[0:4]) == "RIFF" && string(b[8:12]) == "WAVE":
		return ContainerWAV
	case bytes.HasPrefix(b, []byte("ID3")):
		return sniffID3(b)
	case isMP3Frame(b):
		return ContainerMP3
	}
	return ContainerUnknown
}

func sniffOgg(b []byte) Container {
	p, _, err := ReadOggPage(b)
	if err != nil || !p.BOS() || p.Continued() || len(p.Segments) == 0 {
		return ContainerUnknown
	}
	// The first packet: segments up to and including the first below 255.
	n := 0
	for _, s := range p.Segments {
		n += int(s)
		if s < 255 {
			break
		}
	}
	first := p.Body[:n]
	switch {
	case bytes.HasPrefix(first, []byte("OpusHead")):
		// RFC 7845: the OpusHead packet alone on the first page, granule 0.
		if len(p.Segments) != 1 || p.Granule != 0 {
			return ContainerUnknown
		}
		if _, err := ParseOpusHead(first); err != nil {
			return ContainerUnknown
		}
		return ContainerOggOpus
	case len(first) >= 30 && bytes.HasPrefix(first, []byte("\x01vorbis")):
		return ContainerOggVorbis
	}
	return ContainerUnknown
}

// sniffID3 accepts an ID3v2 tag followed by an MP3 frame (after any zero
// padding), or by the end of the data.
func sniffID3(b []byte) Container {
	if len(b) < 10 || b[3] == 0xFF || b[4] == 0xFF || b[6]|b[7]|b[8]|b[9] >= 0x80 {
		return ContainerUnknown
	}
	size := 10 + (int(b[6])<<21 | int(b[7])<<14 | int(b[8])<<7 | int(b[9]))
	if b[5]&0x10 != 0 { // footer present
		size += 10
	}
	if size >= len(b) {
		return ContainerMP3 // only the tag is here; it names MPEG audio
	}
	rest := b[size:]
	for len(rest) > 0 && rest[0] == 0 {
		rest = rest[1:]
	}
	if len(rest) == 0 || isMP3Frame(rest) {
		return ContainerMP3
	}
	return ContainerUnknown
}

// mp3Header is a decoded MPEG audio layer III frame header.
type mp3Header struct {
	version byte // 3 = MPEG-1, 2 = MPEG-2, 0 = MPEG-2.5
	rate    int
	length  int // frame length in bytes
}

var (
	mp3BitratesV1 = [16]int{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 0}
	mp3BitratesV2 = [16]int{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160, 0}
	mp3Rates      = [4][3]int{0: {11025, 12000, 8000}, 2: {22050, 24000, 16000}, 3: {44100, 48000, 32000}}
)

// parseMP3Header decodes a layer III frame header; ok is false for anything
// else (including free-format and reserved values, and AAC's ADTS).
func parseMP3Header(b []byte) (h mp3Header, ok bool) {
	if len(b) < 4 || b[0] != 0xFF || b[1]&0xE0 != 0xE0 {
		return h, false
	}
	version := b[1] >> 3 & 3
	layer := b[1] >> 1 & 3
	bri := b[2] >> 4
	sri := b[2] >> 2 & 3
	if version == 1 || layer != 1 || bri == 0 || bri == 15 || sri == 3 || b[3]&3 == 2 {
		return h, false
	}
	h.version = version
	h.rate = mp3Rates[version][sri]
	pad := int(b[2] >> 1 & 1)
	if version == 3 {
		h.length = 144*1000*mp3BitratesV1[bri]/h.rate + pad
	} else {
		h.length = 72*1000*mp3BitratesV2[bri]/h.rate + pad
	}
	return h, true
}

// isMP3Frame reports a layer III frame header at the start of b, confirmed
// by the next frame's header when b is long enough to hold it.
func isMP3Frame(b []byte) bool {
	h, ok := parseMP3Header(b)
	if !ok {
		return false
	}
	if len(b) < h.length+4 {
		return true
	}
	next, ok := parseMP3Header(b[h.length:])
	return ok && next.version == h.version && next.rate == h.rate
}
