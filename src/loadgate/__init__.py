"""Load gates for the Canonical observability stack."""

__version__ = "0.1.0"
