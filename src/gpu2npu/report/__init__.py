"""Report files: msFmkTransplt's CSV names and leading columns, a JSON twin, a summary table."""
