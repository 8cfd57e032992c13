"""The pull-request comparison (`.github/workflows/charm-pr-compare.yaml`) run here, step by
step as a GitHub runner runs it, against a real charm tree from ../shared/charm-sources, with
each step's wall time. Not a test: one run is a default compare (15 minutes) after the set-up.

    .venv/bin/python benchmarks/pr_compare_workflow.py otelcol|loki --work DIR
        [--cache-store DIR] [--candidate-ref REF] [--input NAME=VALUE ...]

The workflow file is read and its steps are run in order: every `run:` step by bash with the
runner's files (GITHUB_OUTPUT, GITHUB_ENV, GITHUB_PATH, GITHUB_STEP_SUMMARY), RUNNER_TEMP and the
step's `env:`, each `${{ }}` and `if:` evaluated over `inputs`, `github`, `steps`, `env` and
`runner` as Actions does; the `uses:` steps are done by hand, as their actions would:

- `actions/checkout`: a clone of the prepared charm tree with its full history, at the pull
  request's head;
- `actions/setup-python`: the asked versions this machine has, first on PATH (the charm's 3.14
  is not here: loadgate then renders with the newest local Python and says so);
- `actions/setup-go`: the machine's Go;
- `actions/cache/restore` and `save`: a copy from and to `--cache-store/<key>`;
- `actions/upload-artifact`: a copy into `<work>/artifacts/<name>`.

Where a runner would reach GitHub (loadgate cloning the other charm's pinned revision), the job
reads the offline snapshots instead (`LOADGATE_CHARM_SOURCES`). The runner is new each time:
HOME is `<work>/home`, empty, so the pip, uv, Go and loadgate caches are cold; only
`--cache-store` carries the binaries from one run to the next, as the Actions cache does. The
first run with an empty store is the cold cost, a later one the warm.

The charm trees (the pull request):
- otelcol: a clone of the charm's git bundle checked out at `--candidate-ref` (default 0a143d1,
  "feat: Forward internal telemetry (#323)": the collector sends its own logs through its OTLP
  receiver into the logs pipeline, with a resource of its own; `loadgate charms diff` shows it);
  the baseline is its parent, as the pull request's base. (Of the commits around it, 22a44bf,
  99f1990, e0bc929 and fe13a35 render the same collector config as their parents: a load
  comparison of those is an A/A.)
- loki: the rev244 snapshot committed as the base, and a commit on it that has the ingester
  compress chunks with gzip (`chunk_encoding: gzip`, Loki's default is snappy): a change of
  what the charm renders that costs Loki CPU.

loadgate's wheel is built from this checkout's HEAD (a clone, so nothing uncommitted) and passed
as the `loadgate-wheel` input (a file URL). Exits with the job's exit code: the comparison's
(0, 1, 2, 3), or 2 when a set-up step failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from loadgate.charms import sources as charm_source_snapshots

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "charm-pr-compare.yaml"
OTELCOL_CANDIDATE = "0a143d1"


# ---- ${{ }} expressions: the subset the workflow uses (contexts, literals, ==, !=, !, &&, ||,
# always(), success(), failure()), with Actions' semantics: && and || return an operand.

_TOKEN = re.compile(
    r"\s*(?:(?P<op>\|\||&&|==|!=|!|\(|\))|'(?P<str>(?:[^']|'')*)'|(?P<num>-?\d+(?:\.\d+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*))"
)


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot read expression {text!r} at {text[pos:]!r}")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind) if kind != "str" else m.group(kind).replace("''", "'")))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


def _truthy(value: object) -> bool:
    return value not in (None, "", False, 0)


def _loose(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).casefold()


def evaluate(text: str, contexts: Mapping[str, Any], status: Mapping[str, bool]) -> object:
    """Evaluate one expression (the text inside `${{ }}` or an `if:`)."""
    tokens = _tokens(text)
    pos = 0

    def peek() -> tuple[str, str] | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> tuple[str, str]:
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def either() -> object:
        value = both()
        while peek() == ("op", "||"):
            take()
            right = both()
            value = value if _truthy(value) else right
        return value

    def both() -> object:
        value = compared()
        while peek() == ("op", "&&"):
            take()
            right = compared()
            value = right if _truthy(value) else value
        return value

    def compared() -> object:
        value = unary()
        if peek() in (("op", "=="), ("op", "!=")):
            op = take()[1]
            right = unary()
            same = _loose(value) == _loose(right)
            return same if op == "==" else not same
        return value

    def unary() -> object:
        if peek() == ("op", "!"):
            take()
            return not _truthy(unary())
        return primary()

    def primary() -> object:
        kind, value = take()
        if (kind, value) == ("op", "("):
            inner = either()
            take()
            return inner
        if kind == "str":
            return value
        if kind == "num":
            return float(value) if "." in value else int(value)
        if value in ("true", "false"):
            return value == "true"
        if value == "null":
            return None
        if peek() == ("op", "("):
            take()
            take()
            return status[value]
        node: Any = contexts
        for part in value.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        return node

    result = either()
    if pos != len(tokens):
        raise ValueError(f"cannot read expression {text!r}: {tokens[pos:]} left over")
    return result


def declared_inputs(workflow: Mapping[Any, Any]) -> dict[str, Any]:
    """`on.workflow_call.inputs` (PyYAML reads the key `on` as True)."""
    trigger = workflow.get(True) or workflow.get("on") or {}
    return dict(trigger["workflow_call"]["inputs"])


def interpolate(text: str, contexts: Mapping[str, Any], status: Mapping[str, bool]) -> str:
    def one(m: re.Match[str]) -> str:
        value = evaluate(m.group(1), contexts, status)
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return re.sub(r"\$\{\{(.*?)\}\}", one, text, flags=re.DOTALL)


# ---- the runner


@dataclass
class Job:
    work: Path
    workspace: Path
    temp: Path
    home: Path
    cache_store: Path
    tree: Path
    sources: Path  # the charms' offline snapshots
    head: str
    base: str
    env: dict[str, str] = field(default_factory=dict)  # GITHUB_ENV so far
    path: list[str] = field(default_factory=list)  # GITHUB_PATH so far, newest first
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)
    failed: bool = False


def _read_pairs(file: Path) -> dict[str, str]:
    """NAME=VALUE lines and NAME<<EOF heredocs, as the runner reads GITHUB_OUTPUT/GITHUB_ENV."""
    out: dict[str, str] = {}
    lines = file.read_text().splitlines() if file.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, end = line.split("<<", 1)
            body: list[str] = []
            i += 1
            while i < len(lines) and lines[i] != end:
                body.append(lines[i])
                i += 1
            out[name] = "\n".join(body)
        elif "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
        i += 1
    return out


def _base_env(job: Job) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    venv_bin = str(ROOT / ".venv" / "bin")
    path = [p for p in keep.get("PATH", "").split(":") if p and p != venv_bin]
    keep.pop("VIRTUAL_ENV", None)
    keep.update(
        HOME=str(job.home),
        PYENV_ROOT=os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv")),
        CI="true",
        GITHUB_ACTIONS="true",
        GITHUB_WORKSPACE=str(job.workspace),
        RUNNER_TEMP=str(job.temp),
        RUNNER_OS="Linux",
        RUNNER_ARCH="X64",
        PATH=":".join([*job.path, *path]),
        # A runner clones the other charm's pinned revision from GitHub; here, with no GitHub,
        # loadgate reads the same revision from the offline snapshots.
        LOADGATE_CHARM_SOURCES=str(job.sources),
    )
    keep.update(job.env)
    return keep


def _expand_home(path: str, job: Job) -> Path:
    return Path(job.home / path[2:]) if path.startswith("~/") else Path(path)


def _setup_python(with_: Mapping[str, str], job: Job) -> tuple[int, dict[str, str], str]:
    pyenv = Path(os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))) / "versions"
    links = job.temp / "setup-python"
    links.mkdir(parents=True, exist_ok=True)
    wanted = [v.strip() for v in str(with_.get("python-version", "")).splitlines() if v.strip()]
    notes: list[str] = []
    for version in wanted:
        found = sorted(pyenv.glob(f"{version}.*/bin/python{version}"))
        if not found:
            notes.append(f"Python {version} is not on this machine")
            continue
        (links / f"python{version}").unlink(missing_ok=True)
        (links / f"python{version}").symlink_to(found[-1])
        for name in ("python", "python3"):  # the last one asked is the default, as setup-python
            (links / name).unlink(missing_ok=True)
            (links / name).symlink_to(found[-1])
        notes.append(f"Python {version}: {found[-1]}")
    job.path.insert(0, str(links))
    return 0, {}, "; ".join(notes)


def _checkout(with_: Mapping[str, str], job: Job) -> tuple[int, dict[str, str], str]:
    if job.workspace.exists():
        shutil.rmtree(job.workspace)
    subprocess.run(["git", "clone", "--quiet", "--no-local", str(job.tree), str(job.workspace)],
                   check=True)  # fmt: skip
    ref = str(with_.get("ref") or job.head)
    subprocess.run(["git", "-C", str(job.workspace), "checkout", "--quiet", "--detach", ref],
                   check=True)  # fmt: skip
    return 0, {}, f"{job.tree} at {ref[:12]}, full history"


def _cache_restore(with_: Mapping[str, str], job: Job) -> tuple[int, dict[str, str], str]:
    key = str(with_["key"])
    stored = job.cache_store / key
    target = _expand_home(str(with_["path"]), job)
    if not stored.is_dir():
        return 0, {"cache-hit": "false"}, f"no cache for {key}"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(stored, target, symlinks=True, dirs_exist_ok=True)
    return 0, {"cache-hit": "true", "cache-matched-key": key}, f"restored {key}"


def _cache_save(with_: Mapping[str, str], job: Job) -> tuple[int, dict[str, str], str]:
    key = str(with_["key"])
    stored = job.cache_store / key
    if stored.exists():
        return 0, {}, f"{key} is cached already"
    source = _expand_home(str(with_["path"]), job)
    shutil.copytree(source, stored, symlinks=True)
    return 0, {}, f"saved {key}"


def _upload(with_: Mapping[str, str], job: Job) -> tuple[int, dict[str, str], str]:
    into = job.work / "artifacts" / str(with_["name"])
    into.mkdir(parents=True, exist_ok=True)
    copied = []
    for line in str(with_.get("path", "")).splitlines():
        source = _expand_home(line.strip(), job) if line.strip() else None
        if source is None or not source.exists():
            continue
        if source.is_dir():
            shutil.copytree(source, into / source.name, dirs_exist_ok=True)
        else:
            shutil.copy(source, into / source.name)
        copied.append(source.name)
    return 0, {}, f"{into}: {', '.join(copied) or 'nothing'}"


def _setup_go(with_: Mapping[str, str], job: Job) -> tuple[int, dict[str, str], str]:
    out = subprocess.run(["go", "version"], capture_output=True, text=True, check=False)
    return out.returncode, {}, out.stdout.strip()


ACTIONS: dict[str, Callable[[Mapping[str, str], Job], tuple[int, dict[str, str], str]]] = {
    "actions/checkout": _checkout,
    "actions/setup-python": _setup_python,
    "actions/setup-go": _setup_go,
    "actions/cache/restore": _cache_restore,
    "actions/cache/save": _cache_save,
    "actions/upload-artifact": _upload,
}


def _run_shell(script: str, env: Mapping[str, str], job: Job, timeout: float) -> int:
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=job.workspace, env=dict(env), timeout=timeout, check=False,
    )  # fmt: skip
    return proc.returncode


def step_condition(step: Mapping[str, Any]) -> str:
    """A step's `if:` as Actions reads it: without a status function it is `success() && (X)`."""
    condition = str(step.get("if", "success()")).strip()
    if condition.startswith("${{") and condition.endswith("}}"):
        condition = condition[3:-2]
    if not re.search(r"\b(always|success|failure|cancelled)\(\)", condition):
        condition = f"success() && ({condition})"
    return condition


def run_job(
    workflow: Mapping[str, Any], inputs: Mapping[str, str], job: Job, event: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Run the workflow's one job; returns each step's name, outcome, exit code and seconds."""
    (spec,) = workflow["jobs"].values()
    declared = declared_inputs(workflow)
    values: dict[str, Any] = {k: v.get("default", "") for k, v in declared.items()}
    values.update(inputs)
    github = {"sha": job.head, "run_number": 1, "run_attempt": 1, "event": event}
    deadline = time.monotonic() + 60 * float(
        interpolate(str(spec.get("timeout-minutes", 360)), {"inputs": values}, {})
    )
    timings: list[dict[str, Any]] = []
    for number, step in enumerate(spec["steps"], 1):
        name = step.get("name") or step.get("uses") or f"step {number}"
        env = _base_env(job)
        contexts = {
            "inputs": values, "github": github, "steps": job.steps, "env": env,
            "runner": {"temp": str(job.temp), "os": "Linux", "arch": "X64"},
        }  # fmt: skip
        status = {"always": True, "success": not job.failed, "failure": job.failed,
                  "cancelled": False}  # fmt: skip
        for key, value in {**spec.get("env", {}), **step.get("env", {})}.items():
            env[key] = interpolate(str(value), contexts, status)
        condition = step_condition(step)
        began = time.monotonic()
        if not _truthy(evaluate(condition, contexts, status)):
            timings.append({"step": name, "outcome": "skipped", "exit": None, "seconds": 0.0})
            print(f"-- {number}. {name}: skipped ({step.get('if', 'an earlier step failed')})")
            continue
        print(f"-- {number}. {name}", flush=True)
        output = job.temp / f"output-{number}"
        env_file, path_file = job.temp / f"env-{number}", job.temp / f"path-{number}"
        for f in (output, env_file, path_file):
            f.touch()
        env.update(GITHUB_OUTPUT=str(output), GITHUB_ENV=str(env_file),
                   GITHUB_PATH=str(path_file),
                   GITHUB_STEP_SUMMARY=str(job.work / "summary.md"))  # fmt: skip
        if "uses" in step:
            action = str(step["uses"]).split("@")[0]
            with_ = {k: interpolate(str(v), contexts, status) for k, v in
                     step.get("with", {}).items()}  # fmt: skip
            try:
                rc, outputs, note = ACTIONS[action](with_, job)
            except (OSError, subprocess.CalledProcessError, KeyError) as exc:
                rc, outputs, note = 1, {}, f"{action} failed: {exc}"
            print(f"   {note}")
        else:
            script = interpolate(str(step["run"]), contexts, status)
            rc = _run_shell(script, env, job, max(1.0, deadline - time.monotonic()))
            outputs = _read_pairs(output)
            job.env.update(_read_pairs(env_file))
            job.path[:0] = list(reversed(path_file.read_text().split()))
        seconds = time.monotonic() - began
        if step.get("id"):
            outcome = "success" if rc == 0 else "failure"
            job.steps[str(step["id"])] = {"outputs": outputs, "outcome": outcome}
        job.failed = job.failed or rc != 0
        timings.append({"step": name, "outcome": "success" if rc == 0 else "failure",
                        "exit": rc, "seconds": round(seconds, 1)})  # fmt: skip
        print(f"   {'ok' if rc == 0 else f'exit {rc}'} in {seconds:.1f} s", flush=True)
    return timings


# ---- the pull request: a charm tree, its base and its head


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip


def prepare_tree(charm: str, into: Path, candidate_ref: str, sources: Path) -> tuple[str, str]:
    """The pull request's repository at `into`, from the snapshots in `sources`; returns (base
    sha, head sha)."""
    if charm == "otelcol":
        bundle = sources / "opentelemetry-collector-k8s-operator.bundle"
        subprocess.run(["git", "clone", "--quiet", str(bundle), str(into)], check=True)
        head = _git(into, "rev-parse", f"{candidate_ref}^{{commit}}")
        _git(into, "checkout", "--quiet", "-B", "pull-request", head)
        return _git(into, "rev-parse", f"{head}^"), head
    (tarball,) = sorted(sources.glob("loki-k8s-operator-rev*.tar.gz"))
    into.mkdir(parents=True)
    subprocess.run(["tar", "xzf", str(tarball), "-C", str(into)], check=True)
    ident = ["-c", "user.name=loadgate", "-c", "user.email=loadgate@localhost"]
    _git(into, "init", "--quiet", "-b", "main")
    _git(into, "add", "-A")
    _git(into, *ident, "commit", "--quiet", "-m", f"the {tarball.name} snapshot")
    base = _git(into, "rev-parse", "HEAD")
    builder = into / "src" / "config_builder.py"
    text = builder.read_text()
    old = '                "flush_on_shutdown": True,\n            }\n'
    new = ('                "flush_on_shutdown": True,\n            },\n'
           '            "chunk_encoding": "gzip",\n')  # fmt: skip
    if text.count(old) != 1:
        raise SystemExit(f"{builder}: the ingester's WAL block is not where this script expects")
    builder.write_text(text.replace(old, new))
    _git(into, "checkout", "--quiet", "-b", "pull-request")
    _git(into, *ident, "commit", "--quiet", "-am", "ingester: gzip chunks")
    return base, _git(into, "rev-parse", "HEAD")


def build_wheel(into: Path) -> Path:
    """loadgate's wheel from this checkout's HEAD."""
    source = into / "loadgate-src"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(source)], check=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "-w", str(into / "dist"), str(source)],
                   check=True)  # fmt: skip
    (wheel,) = sorted((into / "dist").glob("loadgate-*.whl"))
    return wheel


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("charm", choices=("otelcol", "loki"))
    parser.add_argument(
        "--work",
        type=Path,
        required=True,
        help="a new folder for the runner's files (must not exist)",
    )
    parser.add_argument(
        "--cache-store",
        type=Path,
        default=None,
        help="the Actions cache, kept between runs (default: <work>/cache)",
    )
    parser.add_argument(
        "--candidate-ref",
        default=OTELCOL_CANDIDATE,
        help="otelcol: the pull request's head commit (its parent is the base)",
    )
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a workflow input, e.g. compare-args='--budget 10m'",
    )
    args = parser.parse_args(argv)
    if args.work.exists():
        parser.error(f"--work: {args.work} exists; give a new folder")
    inputs: dict[str, str] = {}
    for item in args.input:
        name, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--input: {item!r} is not NAME=VALUE")
        inputs[name] = value
    workflow = yaml.safe_load(WORKFLOW.read_text())
    declared = declared_inputs(workflow)
    unknown = sorted(set(inputs) - set(declared))
    if unknown:
        parser.error(f"--input: {', '.join(unknown)} not among {', '.join(sorted(declared))}")
    sources = charm_source_snapshots.sources_dir()
    if sources is None or not sources.is_dir():
        parser.error(
            f"no charm snapshots: set ${charm_source_snapshots.ENV_SOURCES_DIR} or run from a "
            "checkout beside ../shared/charm-sources"
        )
    work = args.work.resolve()
    began = time.monotonic()
    work.mkdir(parents=True)
    base, head = prepare_tree(args.charm, work / "repository", args.candidate_ref, sources)
    wheel = build_wheel(work)
    inputs.setdefault("loadgate-wheel", wheel.as_uri())
    inputs.setdefault("charm", args.charm)
    job = Job(work=work, workspace=work / "workspace", temp=work / "runner-temp",
              home=work / "home", cache_store=(args.cache_store or work / "cache").resolve(),
              tree=work / "repository", sources=sources, head=head, base=base)  # fmt: skip
    for folder in (job.temp, job.home, job.cache_store):
        folder.mkdir(parents=True, exist_ok=True)
    print(f"pull request: {args.charm}, base {base[:12]}, head {head[:12]}; wheel {wheel.name}; "
          f"cache store {job.cache_store}", flush=True)  # fmt: skip
    event = {"pull_request": {"number": 1, "head": {"sha": head}, "base": {"sha": base}}}
    prepared = time.monotonic() - began
    timings = run_job(workflow, inputs, job, event)
    total = time.monotonic() - began
    rc_text = job.steps.get("compare", {}).get("outputs", {}).get("exit-code", "")
    rc = int(rc_text) if rc_text.isdigit() else 2
    report = {"charm": args.charm, "base": base, "head": head, "exit_code": rc,
              "prepare_seconds": round(prepared, 1), "total_seconds": round(total, 1),
              "steps": timings}  # fmt: skip
    (work / "timings.json").write_text(json.dumps(report, indent=2) + "\n")
    print("\nstep wall times (s):")
    for t in timings:
        print(f"  {t['seconds']:>8.1f}  {t['outcome']:<8} {t['step']}")
    print(f"  {prepared:>8.1f}  (the tree and the wheel, before the job)")
    print(f"  {total:>8.1f}  in all; the job's exit code {rc}")
    summary = work / "summary.md"
    if summary.exists():
        print(f"\n{summary}:\n{summary.read_text()}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
