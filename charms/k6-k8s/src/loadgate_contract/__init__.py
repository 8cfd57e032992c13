"""The run contract, shared verbatim with the k6 charm (charms/k6-k8s/src/loadgate_contract).

Standard library only: the run specification and its validation, the k6 command and environment,
the k6 summary parser and the gate judge. A test fails if the charm's copy differs.
"""
