//go:build !race

package inspect

const raceDetector = false
