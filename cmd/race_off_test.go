//go:build !race

package cmd

const raceDetector = false
