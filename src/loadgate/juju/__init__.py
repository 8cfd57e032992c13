"""Juju helpers of loadgate, over jubilant: deploy the bundle, drive the k6 charm's actions, reach
Prometheus and Loki in the model over verified TLS, and the pytest plugin of the charm CI gate.

Charm repositories load the plugin with `pytest_plugins = ["loadgate.juju.pytest_plugin"]`.
"""

import importlib.util

if importlib.util.find_spec("jubilant") is None:  # pragma: no cover - depends on the environment
    raise ImportError("loadgate's Juju support needs jubilant: pip install 'loadgate[integration]'")
