"""CI's lock file stays in step with pyproject.toml, and its checker says what it should."""

import pathlib
import subprocess
import sys
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / ".ci"))
import check_lock  # noqa: E402

sys.path.pop(0)


def _declared_requirements():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    yield from project["dependencies"]
    for requirements in project["optional-dependencies"].values():
        yield from requirements


def test_lock_pins_every_declared_dependency_within_its_specifier():
    from packaging.requirements import Requirement

    pins = check_lock.read_lock(check_lock.LOCK)
    problems = []
    for line in _declared_requirements():
        req = Requirement(line)
        name = check_lock.canonical(req.name)
        if name not in pins:
            problems.append(f"{req.name} is not in the lock")
        elif not req.specifier.contains(pins[name], prereleases=True):
            problems.append(f"{req.name}=={pins[name]} does not satisfy {req.specifier}")
    assert not problems, "run `bash .ci/lock` and commit .ci/requirements-lock.txt: " + "; ".join(problems)


def test_lock_takes_torch_from_the_readme_constraints():
    pins = check_lock.read_lock(check_lock.LOCK)
    assert pins["torch"].startswith("2.13.")
    assert "torch==2.13.*" in (ROOT / ".ci" / "constraints.txt").read_text()


@pytest.mark.parametrize("mode, status", [("--exact", 1), ("--drift", 0)])
def test_checker_names_what_differs_from_the_lock(tmp_path, mode, status):
    lock = tmp_path / "lock.txt"
    lock.write_text("pytest==0.0.1\n    # via sklearn-icml (pyproject.toml)\nNot_Installed_Package==1.0\n")
    proc = subprocess.run([sys.executable, str(ROOT / ".ci" / "check_lock.py"), mode, "--lock", str(lock)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == status, proc.stdout + proc.stderr
    assert "pytest: 0.0.1 (lock) -> " in proc.stdout
    assert "numpy: " in proc.stdout and "not in the lock" in proc.stdout
    assert "not-installed-package" not in proc.stdout
