//go:build !linux

package cli

// newSettingsWaker polls every configPollInterval (inotify is Linux's).
func newSettingsWaker(cfgPath, lockPath string) settingsWaker { return newPollWaker() }
