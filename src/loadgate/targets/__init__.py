"""Where a run's load goes and where its figures come from: the local stack or a Juju model."""
