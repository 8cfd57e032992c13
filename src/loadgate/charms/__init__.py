"""The otelcol and Loki charms' own code decides what the local stack runs.

sources.py  which charm code (checkout, git ref, revision tag, snapshot) and its facts
venvs.py    a virtualenv per charm lock to run that code
render.py   run the charms in ops.testing with the bundle's relations (drivers/ run inside)
options.py  charm options from the command line, checked as `juju config` checks them

What they rendered is made to run on loopback by the stack (`stack/localize.py`).
"""
