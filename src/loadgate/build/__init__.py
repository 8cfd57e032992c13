"""Building the pinned upstream binaries (k6, otelcol, Loki, Prometheus, Pebble)."""
