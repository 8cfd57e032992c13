"""The integration suites run against a Juju model through loadgate's pytest plugin, which
tests/conftest.py loads. Without a reachable Juju controller every test here is skipped with
one reason (with --require-juju or LOADGATE_REQUIRE_JUJU=1 that is an error instead)."""
