//go:build race

package cmd

const raceDetector = true
