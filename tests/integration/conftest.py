"""The integration suites run against a Juju model through loadgate's pytest plugin.

Without a reachable Juju controller every test here is skipped with one reason.
"""

pytest_plugins = ["loadgate.juju.pytest_plugin"]
