"""The test tree's top-level conftest: it loads the Juju gate's pytest plugin.

pytest only honours `pytest_plugins` in the top-level conftest of the paths it is given, so the
plugin is loaded here, once, for every suite (`pytest tests` collects them all). It changes
nothing for tests that do not use the gate: only those are skipped, with one reason, when no
Juju controller answers (tests/integration).
"""

pytest_plugins = ["loadgate.gate.plugin"]
