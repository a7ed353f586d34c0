"""The weekly run: its experiment, calibration of a new version, the weekly report."""
