"""Entry point of a render, run with the charm's own interpreter:

    <charm venv>/bin/python render_charm.py <request.json>

Imports the charm from its source (bytecode only under $PYTHONPYCACHEPREFIX), runs it in
ops.testing as the leader unit with the request's relations and options inside the sandbox,
and writes `<work_dir>/out/result.json`
plus every file the charm pushed into its containers. Exit 0 on success; anything else prints
one line saying why.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kit
import sandbox

_DRIVERS = ("otelcol", "loki")


def main(argv: list[str]) -> int:
    began = time.perf_counter()
    request = kit.Request.load(Path(argv[1]))
    if request.driver not in _DRIVERS:
        print(f"render: unknown driver {request.driver!r}; allowed: {', '.join(_DRIVERS)}")
        return 2
    request.out_dir.mkdir(parents=True, exist_ok=True)
    tmp = request.work_dir / "tmp"
    tmp.mkdir(exist_ok=True)
    os.environ["TMPDIR"] = str(tmp)
    tempfile.tempdir = str(tmp)
    journal = sandbox.Journal()
    sandbox.intercept_commands(journal)
    module = kit.import_charm(request.charm_dir)
    driver = __import__(f"{request.driver}_charm")
    root = kit.virtual_root(request.charm_dir, request.work_dir)
    os.chdir(root)  # Juju runs a charm in its charm directory
    # Bytecode goes to $PYTHONPYCACHEPREFIX (set by loadgate to a cache folder), not beside
    # the charm's or the venv's sources.
    prefix = sys.pycache_prefix
    sandbox.install_guard([request.work_dir, *([prefix] if prefix else [])])
    from ops import testing

    ctx = testing.Context(
        kit.charm_class(module), charm_root=root, app_name=request.app, unit_id=request.unit_id
    )
    state = testing.State(
        leader=True,
        config=request.config,
        containers=driver.containers(request),
        relations=[kit.relation(r) for r in request.relations],
        model=testing.Model(name=request.model_name, uuid=request.model_uuid),
    )
    with contextlib.ExitStack() as stack:
        driver.patch(stack, module, request, journal)
        kit.run(request, ctx, state, journal)
    print(f"rendered {request.driver} in {time.perf_counter() - began:.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
