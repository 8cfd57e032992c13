"""Static checks of the Juju bundle against the upstream charms' endpoints."""
