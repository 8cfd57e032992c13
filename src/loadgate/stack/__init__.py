"""The local stack: otelcol, Loki over TLS and Prometheus on loopback, under a Pebble daemon."""
