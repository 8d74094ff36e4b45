#!/usr/bin/env python3
"""Build one platform wheel of verl-score that carries the Go binary.

The wheel is written by hand (a zip with the metadata files of PEP 427 and
PEP 376) rather than through a build backend: the binary is built by Go, the
package has no compiled Python, and this works with no network and no
packages beyond the standard library.

The binary goes in the wheel's .data/scripts, so that pip installs it as the
verl-score command beside the interpreter (as ruff and uv ship theirs);
the Python package finds it there (verl_score/_binary.py).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import stat
import zipfile

NAME = "verl_score"
SUMMARY = "Re-score code-generation rollouts with verl's sandbox verdicts; verl's code reward in one process"


def record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", required=True, help="the verl-score binary for the platform")
    ap.add_argument("--platform", required=True, help="wheel platform tag, e.g. manylinux_2_17_x86_64.manylinux2014_x86_64")
    ap.add_argument("--version", required=True)
    ap.add_argument("--package", required=True, help="the verl_score package directory")
    ap.add_argument("--license", required=True)
    ap.add_argument("--readme", required=True)
    ap.add_argument("--out", required=True, help="directory to write the wheel to")
    a = ap.parse_args()

    dist_info = f"{NAME}-{a.version}.dist-info"
    data = f"{NAME}-{a.version}.data"
    files: list[tuple[str, bytes, int]] = []  # (path in wheel, content, mode)

    for name in sorted(os.listdir(a.package)):
        if name.endswith(".py"):
            with open(os.path.join(a.package, name), "rb") as f:
                files.append((f"{NAME}/{name}", f.read(), 0o644))
    with open(a.binary, "rb") as f:
        files.append((f"{data}/scripts/verl-score", f.read(), 0o755))

    with open(a.readme, encoding="utf-8") as f:
        readme = f.read()
    metadata = (
        "Metadata-Version: 2.1\n"
        "Name: verl-score\n"
        f"Version: {a.version}\n"
        f"Summary: {SUMMARY}\n"
        "License: Apache-2.0\n"
        "Requires-Python: >=3.8\n"
        "Classifier: Programming Language :: Python :: 3\n"
        "Classifier: Operating System :: POSIX :: Linux\n"
        "Description-Content-Type: text/markdown\n"
        "\n" + readme
    )
    wheel = (
        "Wheel-Version: 1.0\n"
        "Generator: verl-score scripts/build_wheel.py\n"
        "Root-Is-Purelib: false\n"
        f"Tag: py3-none-{a.platform}\n"
    )
    with open(a.license, "rb") as f:
        files.append((f"{dist_info}/LICENSE", f.read(), 0o644))
    files.append((f"{dist_info}/METADATA", metadata.encode(), 0o644))
    files.append((f"{dist_info}/WHEEL", wheel.encode(), 0o644))
    files.append((f"{dist_info}/top_level.txt", f"{NAME}\n".encode(), 0o644))

    record = "".join(f"{path},{record_hash(content)},{len(content)}\n" for path, content, _ in files)
    record += f"{dist_info}/RECORD,,\n"
    files.append((f"{dist_info}/RECORD", record.encode(), 0o644))

    os.makedirs(a.out, exist_ok=True)
    out = os.path.join(a.out, f"{NAME}-{a.version}-py3-none-{a.platform}.whl")
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for path, content, mode in files:
            info = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))  # reproducible
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, content)
    print(out)


if __name__ == "__main__":
    main()
