"""Where files handed to the Juju CLI must live so that it can read them.

The juju snap is strictly confined: it cannot read /tmp (the snap has its own) nor hidden
folders of $HOME (a tox env, a virtualenv under `.venv`). What it can always read is
`~/snap/juju/common`, which is where jubilant puts its own temporary files. Every bundle,
overlay and charm loadgate hands to `juju deploy` is staged there when juju is the snap.

Is `juju` the snap? `/snap/bin/juju` is a symbolic link to `/usr/bin/snap` (snapd's launcher,
which looks at the name it was called by), so the link's target says nothing about juju; the
path found on PATH does. juju is taken for the snap when that path is in a `snap/bin` folder, or
resolves to snapd's launcher (an alias such as /usr/local/bin/juju -> /snap/bin/juju).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

_SNAP_COMMON = Path("snap") / "juju" / "common"
_STAGE_FOLDER = "loadgate"


def _juju_is_snap(juju: str | os.PathLike[str] | None) -> bool:
    """Whether the juju found at this path (from PATH) runs as the strictly confined snap."""
    if not juju:
        return False
    path = Path(os.path.abspath(juju))
    if path.parent.name == "bin" and path.parent.parent.name == "snap":
        return True
    return Path(os.path.realpath(path)).name == "snap"


def _stage_root(
    *,
    which: Callable[[str], str | None] = shutil.which,
    home: Path | None = None,
) -> Path:
    """The folder under which staged files go: ~/snap/juju/common/loadgate for the snap,
    else the system's temporary folder."""
    if _juju_is_snap(which("juju")):
        return (home or Path.home()) / _SNAP_COMMON / _STAGE_FOLDER
    return Path(tempfile.gettempdir())


def new_stage_dir(
    prefix: str = "loadgate-deploy-",
    *,
    which: Callable[[str], str | None] = shutil.which,
    home: Path | None = None,
) -> Path:
    """A fresh folder the Juju CLI can read, for one deployment's files."""
    root = _stage_root(which=which, home=home)
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=root))
