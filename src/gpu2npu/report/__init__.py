"""Report files: msFmkTransplt's CSV names and leading columns (``api_reports`` for the API
reports, ``migration`` for migrate's own), a JSON twin, the summary table, one CSV writer."""
