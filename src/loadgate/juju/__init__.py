"""Juju helpers of loadgate, over jubilant: deploy the bundle, drive the k6 charm's actions, reach
Prometheus and Loki in the model over verified TLS. The charm CI gate built on them, and its
pytest plugin, is `loadgate.gate`."""
