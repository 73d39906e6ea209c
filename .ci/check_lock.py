"""Compare the installed distributions with the lock file of CI, ``.ci/requirements-lock.txt``.

``python .ci/check_lock.py --exact``
    Exit 1, naming them, when an installed distribution is missing from the lock or installed at
    another version: the locked stage of ``.ci/run`` must install nothing the lock does not pin (a
    dependency added to ``pyproject.toml`` without ``bash .ci/lock`` shows up here).
``python .ci/check_lock.py --drift``
    List the distributions whose installed version differs from the lock, or that the lock does not
    hold, and exit 0: the latest-releases stage prints this so that a failure there names its
    candidate packages.

The project itself and the installers (pip, setuptools, wheel) are left out of both comparisons.
"""

import argparse
import pathlib
import re
import sys
from importlib import metadata

LOCK = pathlib.Path(__file__).with_name("requirements-lock.txt")
IGNORED = {"sklearn-icml", "pip", "setuptools", "wheel"}


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock(path):
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[canonical(name.split("[", 1)[0])] = version.split(";", 1)[0].strip()
    return pins


def installed():
    found = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            found[canonical(name)] = dist.version
    return {name: version for name, version in found.items() if name not in IGNORED}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--exact", action="store_true", help="fail unless every installed package is locked as is")
    mode.add_argument("--drift", action="store_true", help="list the packages that differ from the lock")
    parser.add_argument("--lock", type=pathlib.Path, default=LOCK)
    args = parser.parse_args(argv)

    pins, have = read_lock(args.lock), installed()
    changed = sorted((n, pins[n], v) for n, v in have.items() if n in pins and pins[n] != v)
    unlocked = sorted((n, v) for n, v in have.items() if n not in pins)
    lines = [f"  {n}: {locked} (lock) -> {v} (installed)" for n, locked, v in changed]
    lines += [f"  {n}: {v} (installed, not in the lock)" for n, v in unlocked]
    if args.exact:
        if lines:
            print(f"{args.lock.name} is stale; regenerate it with `bash .ci/lock` and commit it:", *lines, sep="\n")
            return 1
        print(f"all {len(have)} installed packages are pinned by {args.lock.name}")
        return 0
    print(f"{len(lines)} of {len(have)} installed packages differ from {args.lock.name}", *lines, sep="\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
