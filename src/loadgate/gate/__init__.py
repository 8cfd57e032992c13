"""loadgate's charm CI gate: the stable API a charm repository's tests use.

    # tests/conftest.py
    pytest_plugins = ["loadgate.gate.plugin"]

    # tests/integration/test_load_gate.py
    from loadgate.gate import LoadGate

    def test_load_gate(loadgate: LoadGate) -> None:
        result = loadgate.run()
        assert result.passed, result.explain()

What is stable (kept across releases, changed only with a major version): the names exported
here, the `loadgate` and `loadgate_scenario` fixtures, the options and environment variables the
plugin documents (docs/juju-gate.md), and the fields of GateResult. Everything else in loadgate is
private to it.
"""

from .api import LoadGate
from .model_gate import GateError
from .result import FAIL, PASS, GateCheck, GateResult, LedgerStep, Saturation

__all__ = [
    "FAIL",
    "PASS",
    "GateCheck",
    "GateError",
    "GateResult",
    "LedgerStep",
    "LoadGate",
    "Saturation",
]
