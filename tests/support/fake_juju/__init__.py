"""One fake Juju for the tests: one world state, answered in Juju 3.6's JSON shapes.

- state.py: the world (controller, models, applications, units, leaders, addresses, the k6
  runs) and what Juju answers about it: status, models, show-unit, actions, the collector config.
- cli.py: the `juju` command over a state: argv in, JSON out, every call recorded (the files it
  was handed too, and whether the confined snap could read them).
- inprocess.py: jubilant.Juju answered by cli.py in this process (no subprocess), and the
  Juju helpers' fixtures on it (a model holding the bundle, get-results, a JujuTarget).
- world.py (with servers.py): the same `juju` as a program on PATH, and the model's Prometheus
  and Loki as HTTPS servers, for dry runs in other processes (tests/tools).
- charms.py: packed .charm files (metadata only) for deploys and the bundle checker.
- A timed world (world.Timed): clock.py (a fast clock shared by the world's processes),
  pipeline.py (a collector whose queue fills, holds and drains), timed.py (the k6 charm's runs
  and the log streams over it), scrapes.py (COS's Prometheus scraping once a minute, and Loki).

This file imports nothing: the `juju` program imports cli.py on every call and stays light.
"""
