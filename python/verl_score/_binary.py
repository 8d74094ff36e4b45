"""Finding the verl-score binary that this package carries."""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig

NAME = "verl-score"


def _script_dirs():
    # The wheel installs the binary as a script (where pip puts console
    # scripts): the scheme of this interpreter, then the user scheme.
    yield sysconfig.get_path("scripts")
    for scheme in ("posix_user", "nt_user", "osx_framework_user"):
        try:
            yield sysconfig.get_path("scripts", scheme=scheme)
        except KeyError:
            continue
    yield os.path.dirname(sys.executable)


def find_binary() -> str:
    """Return the path of the verl-score binary.

    VERL_SCORE_BINARY wins; then the script the wheel installed beside this
    interpreter; then verl-score on PATH.
    """
    env = os.environ.get("VERL_SCORE_BINARY")
    if env:
        if not os.access(env, os.X_OK):
            raise FileNotFoundError(f"VERL_SCORE_BINARY={env} is not an executable file")
        return env
    for d in _script_dirs():
        if d:
            p = os.path.join(d, NAME)
            if os.path.isfile(p) and os.access(p, os.X_OK):
                return p
    p = shutil.which(NAME)
    if p:
        return p
    raise FileNotFoundError(
        "the verl-score binary was not found: install a platform wheel of verl-score, "
        "put verl-score on PATH, or set VERL_SCORE_BINARY"
    )


def main() -> None:
    """Run the binary with this process's arguments, in place of Python."""
    binary = find_binary()
    os.execv(binary, [binary, *sys.argv[1:]])
