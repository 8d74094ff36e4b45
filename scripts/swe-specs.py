#!/usr/bin/env python3
"""Write swe/specs_v4.1.0.json: how SWE-bench v4.1.0 evaluates each (repo,
version) of its Python repositories, read from the installed `swebench`
package. Only what the evaluation script and the grading use is kept: the
test command, the evaluation commands, the install command and the log
parser's name. Run with the Python of a venv that has swebench==4.1.0:

    python scripts/swe-specs.py > swe/specs_v4.1.0.json
"""
import json
import sys

import swebench
from swebench.harness.constants import MAP_REPO_VERSION_TO_SPECS_PY
from swebench.harness.log_parsers import MAP_REPO_TO_PARSER

if swebench.__version__ != "4.1.0":
    sys.exit(f"swebench {swebench.__version__} is installed; this table is of 4.1.0")

out = {}
for repo in sorted(MAP_REPO_VERSION_TO_SPECS_PY):
    versions = {}
    for version in sorted(MAP_REPO_VERSION_TO_SPECS_PY[repo]):
        spec = MAP_REPO_VERSION_TO_SPECS_PY[repo][version]
        if "test_cmd" not in spec or repo not in MAP_REPO_TO_PARSER:
            continue  # SWE-bench cannot evaluate these either
        cmd = spec["test_cmd"]
        entry = {"test_cmd": cmd if isinstance(cmd, list) else [cmd]}
        if spec.get("eval_commands"):
            entry["eval_commands"] = list(spec["eval_commands"])
        if spec.get("install"):
            entry["install"] = spec["install"]
        entry["log_parser"] = MAP_REPO_TO_PARSER[repo].__name__
        versions[version] = entry
    if versions:
        out[repo] = versions
json.dump({"swebench": swebench.__version__, "specs": out}, sys.stdout, indent=1, sort_keys=True)
sys.stdout.write("\n")
