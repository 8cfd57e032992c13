"""One fake of each role the tests need in place of the world: `prometheus.FakeProm`, the
Prometheus HTTP API over samples a test or a simulation writes."""
