package telegram

import (
	"testing"

	"github.com/go-telegram/bot/models"
)

func TestLargestPhoto_FitsTheCap(t *testing.T) {
	sizes := []models.PhotoSize{
		{FileID: "s", Width: 90, Height: 90, FileSize: 1000},
		{FileID: "m", Width: 320, Height: 320, FileSize: 20000},
		{FileID: "x", Width: 2560, Height: 2560, FileSize: 3000000},
		{FileID: "l", Width: 1280, Height: 1280, FileSize: 200000},
	}
	for _, tc := range []struct {
		limit int64
		want  string
		ok    bool
	}{{10 << 20, "x", true}, {1 << 20, "l", true}, {20000, "m", true}, {999, "", false}} {
		got, ok := largestPhoto(sizes, tc.limit)
		if ok != tc.ok || got.FileID != tc.want {
			t.Errorf("limit %d: got %q %v, want %q %v", tc.limit, got.FileID, ok, tc.want, tc.ok)
		}
	}
}
