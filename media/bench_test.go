package media

import (
	"bytes"
	"image"
	"image/jpeg"
	"testing"
)

// BenchmarkPrepareImage_12MP scales a phone-camera-sized JPEG (4000×3000)
// to the default 2048 pixels and re-encodes it: the cost a photo adds at
// accept time.
func BenchmarkPrepareImage_12MP(b *testing.B) {
	img := image.NewRGBA(image.Rect(0, 0, 4000, 3000))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 31 % 253)
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	lim := DefaultLimits()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		out, _, w, _, err := PrepareImage(data, lim.ImageMaxSide, lim.ImageMaxBytes)
		if err != nil || w != 2048 || len(out) > lim.ImageMaxBytes {
			b.Fatalf("w=%d bytes=%d err=%v", w, len(out), err)
		}
	}
}
