"""`loadgate search --target juju --model M`: the capacity search through a model's k6 charm.

Each step is a `start-load` of the k6 charm (runner.execute with the Juju target), its figures
from the model's Prometheus, which COS fills once a minute: a step must span several scrapes,
so the search's steps are minutes long (JUJU_PLAN), not the local stack's seconds, and the
waits for a fresh scrape (settling between steps, the read-back after each) allow for that
interval. Flags given win over JUJU_PLAN.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text

from loadgate.capacity.search.record import SEARCH_FILE, SearchRecord
from loadgate.capacity.search.rule import SearchPlan
from loadgate.contract.spec import RunSpec
from loadgate.measure.queries import QueryError
from loadgate.runner import run as runner

from .common import UsageError, console, error
from .search_output import print_search, search_live, wide_stdout

if TYPE_CHECKING:
    from .seams import Seams

# The search's steps on a model: the saturation step as long as `loadgate run --target juju
# --saturate` (a steady window of three COS scrapes at least), holds and probes of minutes
# judged by the gates alone (a hold's steady window of COS scrapes a minute apart is too
# coarse to see it fall behind by half the precision), and a budget that covers the longest
# noiseless search of that plan (SearchPlan.problems).
JUJU_PLAN: dict[str, int] = {
    "saturate_s": 480,
    "hold_s": 300,
    "hold_min_s": 180,
    "keep_up_s": 0,
    "probe_s": 180,
    "budget_s": 3600,
}
# Between steps the collector's queue must be empty in a fresh scrape: a drain of minutes
# and scrapes a minute apart.
_SETTLE_TIMEOUT = 600.0


def check_target_flags(args: argparse.Namespace) -> bool:
    """Whether the search goes to a model (--target juju); --model with it, and only with it."""
    juju = getattr(args, "target", "local") == "juju"
    model = getattr(args, "model", None)
    if juju and not model:
        raise UsageError("--model: required with --target juju (the model holding the bundle)")
    if not juju and model:
        raise UsageError("--model: only applies with --target juju")
    return juju


def search_model(
    args: argparse.Namespace,
    plan: SearchPlan,
    base: RunSpec,
    root: Path,
    search_ids: list[str],
    seams: Seams,
) -> list[SearchRecord] | None:
    """The searches (one, or `--repeat`'s) through the model's k6 charm, each printed when
    there are several; None when the model or a step failed (said on the console)."""
    # Imported here: jubilant and the Juju target load only for a Juju search.
    import jubilant

    from ..juju import actions, deployed, endpoints
    from ..juju.model import ActionError
    from ..targets.juju import SCRAPE_TIMEOUT, JujuTarget, labelled_for_model

    juju = jubilant.Juju(model=args.model)
    try:
        base = labelled_for_model(base, juju.status(), "otelcol")
        target = JujuTarget(juju)
    except (deployed.MismatchError, endpoints.EndpointError, ActionError, jubilant.CLIError,
            QueryError) as exc:  # fmt: skip
        error("search", f"model {args.model}: {exc}")
        return None
    stack: dict[str, Any] = {"target": target.name, "model": args.model, **target.environment()}
    stack["scenario"] = base.scenario
    records: list[SearchRecord] = []
    try:
        for i, one in enumerate(search_ids, 1):
            if len(search_ids) > 1:
                console.print(Text(f"search {i} of {len(search_ids)}: {one}", style="bold"))
            record = search_live(
                target, plan, base, root, one, stack, args, seams,
                scrape_timeout=SCRAPE_TIMEOUT, settle_timeout=_SETTLE_TIMEOUT,
            )  # fmt: skip
            records.append(record)
            if len(search_ids) > 1:
                print_search(wide_stdout(), records[-1], root)
    except (runner.RunError, QueryError, ActionError, actions.ActionResultError) as exc:
        error("search", exc)
        path = root / search_ids[len(records)] / SEARCH_FILE
        if path.is_file():
            console.print(Text(f"partial search: {path}"), soft_wrap=True)
        return None
    finally:
        target.close()
    return records
