//go:build race

package inspect

// raceDetector is true when the tests run under -race, which slows this
// package's map-and-sort work about tenfold.
const raceDetector = true
