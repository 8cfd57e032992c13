"""The end-of-run tables and the report page (rows, plots, HTML)."""
