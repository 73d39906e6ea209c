"""Docs, README, CI and benchmarks stay in step with the code."""

import importlib
import importlib.util
import json
import pathlib
import re
import runpy
import shutil
import subprocess
import sys

import pytest

import sklearn_icml
from sklearn_icml.utils.discovery import all_estimators

ROOT = pathlib.Path(__file__).resolve().parents[1]
FAMILIES = [f for f in sklearn_icml._SUBMODULES if f != "utils"]


def _readme_commands():
    text = (ROOT / "README.md").read_text()
    setup = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", setup)


def test_readme_has_exactly_two_setup_commands_and_ci_runs_them():
    commands = _readme_commands()
    assert len(commands) == 2
    assert "sklearn_icml tour" in commands[0] and "pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text()
    for command in commands:
        assert f"\n{command}\n" in ci, command


@pytest.mark.parametrize("family", FAMILIES)
def test_api_page_lists_every_public_name(family):
    names = list(getattr(importlib.import_module(f"sklearn_icml.{family}"), "__all__", []))
    if not names:
        pytest.skip(f"sklearn_icml.{family} exports nothing yet")
    page = ROOT / "doc" / "api" / f"{family}.rst"
    assert page.exists(), f"doc/api/{family}.rst is missing"
    listed = set(re.findall(r"^\s{3}(\w+)\s*$", page.read_text(), flags=re.M))
    assert set(names) <= listed, set(names) - listed


def _user_guide_pages():
    """The pages the user guide's table of contents lists, in its order."""
    text = (ROOT / "doc" / "user_guide.rst").read_text()
    entries = re.findall(r"^ {3}(\S+)\s*$", text.split(".. toctree::", 1)[1], flags=re.M)
    return [ROOT / "doc" / f"{entry}.rst" for entry in entries]


def test_user_guide_lists_one_page_per_paper_in_order():
    pages = _user_guide_pages()
    assert all(page.exists() for page in pages), [p for p in pages if not p.exists()]
    codes = []
    for page in pages:
        title = re.search(r"^(.+)\n=+\n", page.read_text(), flags=re.M).group(1)
        codes += [int(code) for code in re.findall(r"\(S(\d+)\)\s*$", title)]
    assert codes == list(range(1, 20)), codes
    unlisted = set((ROOT / "doc" / "modules").glob("*.rst")) - set(pages)
    assert not unlisted, unlisted


@pytest.mark.skipif(shutil.which("chromium") is None, reason="the layout check needs a chromium binary")
def test_layout_check_fails_on_planted_faults():
    """doc/check_layout.py passes a clean page and fails a too-wide page, a too-wide table, raw TeX,
    math without MathJax and a TeX error, each in a real browser."""
    check = runpy.run_path(str(ROOT / "doc" / "check_layout.py"))
    assert check["self_test"]() == 0


def test_every_estimator_has_a_user_guide_page_an_example_and_a_readme_row():
    readme = (ROOT / "README.md").read_text()
    examples = "\n".join(p.read_text() for p in (ROOT / "examples").rglob("*.py"))
    guide = "\n".join(page.read_text() for page in _user_guide_pages())
    for name, cls in all_estimators():
        assert f":class:`{name}`" in guide or f":class:`~{cls.__module__.rsplit('.', 1)[0]}.{name}`" in guide, (
            f"no user-guide page presents {name}")
        assert name in examples, f"no example uses {name}"
        row = next((line for line in readme.splitlines() if f"`{name}`" in line), "")
        assert row.endswith("| available |"), f"README method table: {name} not marked available"


_HELP_OF_EVERY_SCRIPT = """
import contextlib, io, json, runpy, sys
out = {}
for script in sys.argv[1:]:
    buffer, code = io.StringIO(), None
    sys.argv = [script, "--help"]
    with contextlib.redirect_stdout(buffer):
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as exc:
            code = exc.code
    out[script] = [code, buffer.getvalue()]
print(json.dumps(out))
"""


def test_every_benchmark_takes_the_shared_options():
    # every script's --help, run as __main__, in one interpreter: the imports they share are paid once
    scripts = sorted(str(p) for p in (ROOT / "benchmarks").glob("bench_*.py"))
    proc = subprocess.run([sys.executable, "-c", _HELP_OF_EVERY_SCRIPT, *scripts], capture_output=True, text=True,
                          timeout=600, cwd=ROOT / "benchmarks")
    assert proc.returncode == 0, proc.stderr
    helps = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sorted(helps) == scripts
    for script, (code, text) in helps.items():
        assert code == 0, (script, code)
        for option in ("--quick", "--seeds", "--device", "--output"):
            assert option in text, (pathlib.Path(script).name, option)


def test_examples_have_a_gallery_title():
    for script in (ROOT / "examples").rglob("plot_*.py"):
        head = script.read_text().split('"""')[1].strip("\n").splitlines()
        assert set(head[0]) == {"="} and len(head[0]) >= len(head[1]) and set(head[2]) == {"="}, script


def _public_objects():
    """Import paths of every public class, its own public methods, and every public function."""
    import inspect

    paths = []
    for family in sklearn_icml._SUBMODULES:
        module = importlib.import_module(f"sklearn_icml.{family}")
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            paths.append(f"sklearn_icml.{family}.{name}")
            if inspect.isclass(obj):
                for attr, value in vars(obj).items():
                    if not attr.startswith("_") and (inspect.isfunction(value) or isinstance(value, property)
                                                     or isinstance(value, (classmethod, staticmethod))):
                        paths.append(f"sklearn_icml.{family}.{name}.{attr}")
    return paths


def test_numpydoc_validation_as_in_the_docs_build():
    """The same numpydoc checks as doc/conf.py, so `sphinx -W` does not surprise."""
    numpydoc_validate = pytest.importorskip("numpydoc.validate")

    conf = runpy.run_path(str(ROOT / "doc" / "conf.py"))
    skip = conf["numpydoc_validation_checks"] - {"all"}
    excluded = [re.compile(p) for p in conf["numpydoc_validation_exclude"]]
    problems = []
    for path in _public_objects():
        if any(p.search(path) for p in excluded):
            continue
        for code, message in numpydoc_validate.validate(path)["errors"]:
            if code not in skip:
                problems.append(f"{path}: {code} {message}")
    assert not problems, "\n".join(problems)


def test_readme_quick_example_runs(capsys):
    text = (ROOT / "README.md").read_text()
    example = text.split("## A quick example", 1)[1]
    code = re.search(r"```python\n(.+?)\n```", example, flags=re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})
    assert "logisticregression__C" in capsys.readouterr().out


# Words of the workshop, not of the documentation: published pages (rst sources and generated benchmark pages)
# say "target" for a threshold, "preliminary run", "with uncommitted changes", and keep history in the changelog.
_WORKSHOP_WORDS = [
    (r"\bdirty\b", "say 'with uncommitted changes'"),
    (r"(?<!error )(?<!progress )\bbars?\b(?! chart| plot)", "say 'target' for a threshold"),
    (r"\bpilots?\b", "say 'preliminary run'"),
    (r"\bsessions?\b", "the pages do not speak of sessions"),
    (r"\bengineers?\b|\bwork items?\b|\bissue #?\d+", "the pages do not speak of the team's work"),
]
_HISTORY = [
    (r"\ban? (earlier|previous|former) (version|layout|release|implementation)s?\b", "history: doc/whats_new.rst"),
    (r"\bbefore this change\b|\bformerly\b|\bno longer\b", "history: doc/whats_new.rst"),
    (r"(?<!is )(?<!are )(?<!was )(?<!were )(?<!be )(?<!been )\bused to (carry|be|have|use|run|call|train|give|"
     r"compute|take)\b", "history: doc/whats_new.rst"),
]


def _workshop_words(path, text):
    """(line number, match, advice) of every workshop word in ``text`` (history allowed in the changelog only)."""
    rules = _WORKSHOP_WORDS + ([] if pathlib.Path(path).name == "whats_new.rst" else _HISTORY)
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        for pattern, advice in rules:
            out += [(number, m.group(0), advice) for m in re.finditer(pattern, line, flags=re.I)]
    return out


def _published_pages():
    """Every rst source under doc/ (generated benchmark pages included) and the pages as rendered now."""
    spec = importlib.util.spec_from_file_location("render_docs", ROOT / "benchmarks" / "render_docs.py")
    render = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render)
    skip = {"_build", "generated", "auto_examples"}
    pages = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in sorted((ROOT / "doc").rglob("*.rst"))
             if not skip & set(p.relative_to(ROOT / "doc").parts)}
    pages.update({f"doc/{rel} (rendered)": text for rel, text in render.render_all().items()})
    return pages


def test_published_pages_have_no_workshop_words():
    pages = _published_pages()
    assert "doc/index.rst" in pages and "doc/negative_results.rst (rendered)" in pages
    found = [f"{path}:{n}: {word!r} ({advice})" for path, text in pages.items()
             for n, word, advice in _workshop_words(path, text)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("planted, caught", [
    ("The fit met the 2 s bar on 10^6 rows.", True),
    ("Rows without a bar ran once.", True),
    ("A pilot of this setting gave 0.9.", True),
    ("run from a dirty tree", True),
    ("One seed: a second did not fit in the session's time.", True),
    ("(an earlier version used ``sqrt(2) ||h||``)", True),
    ("Four estimators used to carry their own loops.", True),
    ("The fit met the 2 s target; error bars are one standard deviation.", False),
    ("The estimator is used to compute a preliminary run's bound.", False),
])
def test_a_planted_workshop_word_is_caught(tmp_path, planted, caught):
    page = tmp_path / "page.rst"
    page.write_text(f"Title\n=====\n\nSome prose.\n{planted}\n")
    found = _workshop_words(page, page.read_text())
    assert bool(found) == caught, found
    if caught:
        assert found[0][0] == 5
    # history is the changelog's: the same words there are fine, the vocabulary words are not
    changelog = tmp_path / "whats_new.rst"
    changelog.write_text(planted)
    assert bool(_workshop_words(changelog, planted)) == (caught and "used" not in planted and "earlier" not in planted)


# History belongs to the changelog, not to the code: comments and docstrings state the present behaviour and its
# reason ("is used to compute" describes a purpose and is fine; "used to compute" alone is history).
_CODE_HISTORY = re.compile(r"(?<!is )(?<!are )(?<!was )(?<!were )(?<!be )(?<!been )(?<!being )\bused to\b"
                           r"|\bpreviously\b|\bformerly\b|\bearlier versions?\b|\bthe former ", flags=re.I)


def _code_history_phrases(path):
    """(line number, phrase) of every history phrase in the comments and docstrings of the Python file ``path``."""
    import ast
    import io
    import tokenize

    source = pathlib.Path(path).read_text(encoding="utf-8")
    prose = [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(source).readline)
             if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                prose += [(first.lineno + i, line) for i, line in enumerate(first.value.value.splitlines())]
    # a phrase may wrap across two lines of a docstring or a comment block: scan each line joined to the next
    prose.sort()
    found = set()
    for (number, text), (_, following) in zip(prose, prose[1:] + [(0, "")]):
        joined = " ".join(text.lstrip("#").split()) + " " + " ".join(following.lstrip("#").split())
        found |= {(number, m.group(0).strip().lower()) for m in _CODE_HISTORY.finditer(joined)
                  if m.start() <= len(" ".join(text.lstrip("#").split()))}
    return sorted(found)


def test_code_comments_and_docstrings_keep_no_history():
    files = sorted((ROOT / "sklearn_icml").rglob("*.py"))
    assert len(files) > 50
    found = [f"{path.relative_to(ROOT)}:{n}: {phrase!r} (history: doc/whats_new.rst)"
             for path in files for n, phrase in _code_history_phrases(path)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("planted, caught", [
    ('    """Fit the model.\n\n    The layout of an earlier version drew rows.\n    """', True),
    ("    # the solver previously ran in float64", True),
    ("    # Formerly a dense matrix.", True),
    ('    """Scores.\n\n    Four estimators used to carry their own\n    loops.\n    """', True),
    ("    # kept in float32: the former layout overflowed", True),
    ("    # the buffer is used to\n    # compute the argmin", False),
    ('    """Scores.\n\n    The grid is used to build the kernel.\n    """', False),
    ("    note = 'previously fitted'  # a string, not prose", False),
])
def test_a_planted_history_phrase_in_code_is_caught(tmp_path, planted, caught):
    module = tmp_path / "module.py"
    module.write_text(f"def f():\n{planted}\n    return 1\n")
    found = _code_history_phrases(module)
    assert bool(found) == caught, found
    if caught:
        assert found[0][0] >= 2
