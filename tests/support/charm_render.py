"""What the local workload binaries answer to their version flags; the charms read it when
they render. The suites that render without the binaries use these (the stack asks the binary)."""

OTELCOL_VERSION = "otelcol version 0.130.1"
LOKI_VERSION = "loki, version 3.7.8 (branch: HEAD, revision: unknown)"
