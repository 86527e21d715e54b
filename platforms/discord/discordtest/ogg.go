package discordtest

import (
	"encoding/binary"
	"time"
)

// Ogg/Opus constants for the fixture: 48 kHz granules, 20 ms packets, and
// the customary 312-sample pre-skip.
const (
	opusRate       = 48000
	samplesPer20ms = opusRate / 50
	fixturePreSkip = 312
	packetsPerPage = 50
)

// silentPacket is an Opus packet (CELT fullband, 20 ms, mono, code 0)
// carrying silence.
var silentPacket = [...]byte{0xF8, 0xFF, 0xFE}

// OggOpus returns a valid Ogg/Opus stream of silence lasting d (rounded to
// 20 ms, at least one packet): an OpusHead page, an OpusTags page and audio
// pages with correct granule positions and CRCs. Tests use it as a TTS
// result or as an inbound voice message.
func OggOpus(d time.Duration) []byte {
	// The packets must hold the pre-skip and then d of audio; the last
	// granule says where the audio ends (RFC 7845 §4), trimming the rest.
	audio := max(int64(d.Seconds()*opusRate), samplesPer20ms)
	total := int64(fixturePreSkip) + audio
	packets := int((total + samplesPer20ms - 1) / samplesPer20ms)
	const serial = 0x48524d53
	var out []byte
	seq := uint32(0)
	page := func(headerType byte, granule int64, pkts [][]byte) {
		out = appendOggPage(out, headerType, granule, serial, seq, pkts)
		seq++
	}

	head := make([]byte, 19)
	copy(head, "OpusHead")
	head[8] = 1 // version
	head[9] = 1 // channels
	binary.LittleEndian.PutUint16(head[10:], fixturePreSkip)
	binary.LittleEndian.PutUint32(head[12:], opusRate)
	page(0x02, 0, [][]byte{head})

	vendor := "hermesd discordtest"
	tags := make([]byte, 8+4+len(vendor)+4)
	copy(tags, "OpusTags")
	binary.LittleEndian.PutUint32(tags[8:], uint32(len(vendor)))
	copy(tags[12:], vendor)
	page(0, 0, [][]byte{tags})

	for sent := 0; sent < packets; {
		n := min(packetsPerPage, packets-sent)
		pkts := make([][]byte, n)
		for i := range pkts {
			pkts[i] = silentPacket[:]
		}
		sent += n
		granule := int64(sent * samplesPer20ms)
		var ht byte
		if sent == packets {
			ht, granule = 0x04, total // end of stream, trimmed to the real length
		}
		page(ht, granule, pkts)
	}
	return out
}

// Waveform returns 256 waveform samples (a gentle ramp), the shape a TTS
// Delivery carries.
func Waveform() []byte {
	w := make([]byte, 256)
	for i := range w {
		w[i] = byte(i)
	}
	return w
}

// appendOggPage appends one Ogg page holding pkts (each under 255*255
// bytes) to out.
func appendOggPage(out []byte, headerType byte, granule int64, serial, seq uint32, pkts [][]byte) []byte {
	var segs []byte
	var body []byte
	for _, p := range pkts {
		n := len(p)
		for n >= 255 {
			segs = append(segs, 255)
			n -= 255
		}
		segs = append(segs, byte(n))
		body = append(body, p...)
	}
	start := len(out)
	hdr := make([]byte, 27)
	copy(hdr, "OggS")
	hdr[5] = headerType
	binary.LittleEndian.PutUint64(hdr[6:], uint64(granule))
	binary.LittleEndian.PutUint32(hdr[14:], serial)
	binary.LittleEndian.PutUint32(hdr[18:], seq)
	hdr[26] = byte(len(segs))
	out = append(out, hdr...)
	out = append(out, segs...)
	out = append(out, body...)
	binary.LittleEndian.PutUint32(out[start+22:], oggCRC(out[start:]))
	return out
}

// oggCRC is the Ogg page checksum: CRC-32, polynomial 0x04c11db7, no
// reflection, zero initial value, computed with the CRC field zeroed.
func oggCRC(page []byte) uint32 {
	var crc uint32
	for _, b := range page {
		crc ^= uint32(b) << 24
		for range 8 {
			if crc&0x80000000 != 0 {
				crc = crc<<1 ^ 0x04c11db7
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
