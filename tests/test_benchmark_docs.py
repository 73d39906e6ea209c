"""The generated benchmark pages: rendered from the saved results files and checked against them.

Runs no benchmark. Every number on a page is recomputed here from the raw per-seed values (independently of
``benchmarks/_bench.py``: numpy for mean and spread, ``scipy.stats.ttest_rel`` for the paired interval).
"""

import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH_DIR = ROOT / "benchmarks"
RESULTS_DIR = BENCH_DIR / "results"
DOC_DIR = ROOT / "doc"


def _module(name):
    spec = importlib.util.spec_from_file_location(name, BENCH_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


render = _module("render_docs")
bench = _module("_bench")

RESULTS = sorted(p for p in RESULTS_DIR.glob("*.json") if not p.name.endswith(".quick.json"))

# ---------------------------------------------------------------------------------------------- fixtures


FIXTURE_COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _fixture_run(results_dir, *, name="fixture", seeds=4, shift=0.0, git=(FIXTURE_COMMIT, False)):
    """A small results file written through the benchmark helper itself (no benchmark runs).

    ``git`` is the ``(commit, dirty)`` the run records: a committed tree by default, so that the fixture does
    not depend on the checkout the tests run from (a source tree without ``.git`` included).
    """
    with mock.patch.object(bench, "git_state", return_value=git):
        args = bench.bench_args("Fixture benchmark: a tiny race.", ["--results-dir", str(results_dir), "--seeds",
                                                                     str(seeds)], name=name)
    race = bench.Table("Fit time, n=2*10^4", "seconds", higher_is_better=False)
    noisy = [0.3, -0.4, 0.25, -0.35, 0.1, -0.15]
    for s in args.seeds:
        race.add("n=10", "FixtureEstimator", 1.0 + 0.01 * s + shift, ours=True, seed=s)
        race.add("n=10", "slow_peer", 2.0 + 0.02 * s + shift, seed=s)
        race.add("n=10", "fast_peer", 0.5 + 0.01 * s + shift, seed=s)
        race.add("n=20", "FixtureEstimator", 1.0 + noisy[s] + shift, ours=True, seed=s)
        race.add("n=20", "slow_peer", 1.0 + shift, seed=s)
        # a planted loss behind a peer that ran on one seed: 10x slower, yet no interval can be formed
        race.add("n=30", "FixtureEstimator", 3.0 + 0.01 * s + shift, ours=True, seed=s)
        # a single-seed peer that we beat: unpaired too, but not a negative result
        race.add("n=40", "FixtureEstimator", 0.5 + 0.01 * s + shift, ours=True, seed=s)
    race.add("n=30", "one_seed_peer", 0.3 + shift, seed=0)
    race.add("n=40", "one_seed_peer", 2.0 + shift, seed=0)
    race.bar("FixtureEstimator within 1.5 s (a budget)", race.mean("n=10", "FixtureEstimator"), 1.5)
    race.bar("FixtureEstimator no slower than fast_peer", race.mean("n=10", "FixtureEstimator") /
             race.mean("n=10", "fast_peer"), 1.0, op="<=")
    race.claim("twice as fast as slow_peer", paper="2x", reproduced="yes", measured="2x")
    quality = bench.Table("Quality", "ARI", higher_is_better=True)
    for s in args.seeds:
        quality.add("blobs", "FixtureEstimator", 0.9 - 0.01 * s, ours=True, seed=s)
        quality.add("blobs", "peer", 0.8 - 0.01 * s, seed=s)
        quality.add("blobs", "broken peer", float("nan"), seed=s)
    quality.claim("beats the peer by 0.2 ARI", paper="+0.2", reproduced="partly", measured=0.1)
    quality.note("a note with `markup` and *stars*")
    with open(os.devnull, "w") as devnull:
        bench.emit([race, quality], args, file=devnull, estimators=["FixtureEstimator"])
    return results_dir / f"{name}.json"


@pytest.fixture
def fixture_tree(tmp_path):
    results = tmp_path / "results"
    _fixture_run(results)
    doc = tmp_path / "doc"
    (doc / "benchmarks").mkdir(parents=True)
    return results, doc


def _files(include_fixture_dir=None):
    files = list(RESULTS)
    if include_fixture_dir is not None:
        files += sorted(include_fixture_dir.glob("*.json"))
    return files


# ------------------------------------------------------------------------------------ independent derivation


def _raw(table):
    out = {}
    for r in table["rows"]:
        vals = {}
        for v in r["values"]:
            x = v["value"]
            vals.setdefault(v["seed"], []).append(math.nan if x is None else float(x) if not isinstance(x, str)
                                                  else (math.inf if x == "inf" else -math.inf))
        out[(r["case"], r["method"])] = (r["ours"], vals)
    return out


def _expected_rows(table):
    """(case, method) -> (mean, std, ratio, verdict) from the raw values and the definitions."""
    from scipy.stats import ttest_rel

    raw = _raw(table)
    higher = table["direction"] == "higher"
    stats = {}
    for key, (_, vals) in raw.items():
        flat = np.array([x for seed in vals for x in vals[seed]], dtype=float)
        flat = flat[~np.isnan(flat)]
        stats[key] = (flat.mean() if flat.size else math.nan, flat.std(ddof=1) if flat.size > 1 else
                      (0.0 if flat.size else math.nan), flat.size)
    expected = {}
    for case in {c for c, _ in raw}:
        peers = [m for (c, m), (ours, _) in raw.items() if c == case and not ours and stats[(c, m)][2] > 0]
        best = None
        if peers:
            best = sorted(peers, key=lambda m: (-stats[(case, m)][0] if higher else stats[(case, m)][0]))[0]
        for (c, m), (ours, vals) in raw.items():
            if c != case:
                continue
            mean, std, n = stats[(c, m)]
            ratio = verdict = None
            if best is not None and n > 0:
                ref = stats[(case, best)][0]
                ratio = mean / ref if ref != 0 else math.nan
                if ours and table.get("verdicts", True):
                    peer_vals = raw[(case, best)][1]
                    a, b = [], []
                    for seed, xs in vals.items():
                        for x, y in zip(xs, peer_vals.get(seed, [])):
                            if not (math.isnan(x) or math.isnan(y)):
                                a.append(x)
                                b.append(y)
                    # the peer's values (not NaN) must cover ours, and at least three pairs: else no verdict
                    n_peer = stats[(case, best)][2]
                    verdict = "tie" if len(a) >= 3 and n_peer >= n else "unpaired"
                    if verdict == "tie":
                        d = np.subtract(a, b)
                        scale = max(float(np.max(np.abs(a))), float(np.max(np.abs(b))))
                        # equal up to rounding (a peer computing the same thing): no difference at all
                        if np.all(np.abs(d) <= 1e-12 * scale):
                            low = high = 0.0
                        # constant difference (up to rounding): the interval is the point itself
                        elif np.allclose(d, d[0], rtol=1e-12, atol=1e-15):
                            low = high = d[0]
                        else:
                            low, high = ttest_rel(a, b).confidence_interval(0.95)
                        if low > 0 or high < 0:
                            verdict = "win" if (np.mean(d) > 0) == higher else "loss"
            expected[(c, m)] = (mean, std, ratio, verdict)
    return expected


def _close(a, b):
    if a is None or b is None:
        return a is None and b is None
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == pytest.approx(b, rel=1e-9, abs=1e-12)


def _check_numbers(path, page_text):
    doc = render.load(path)
    for _label, _, parts in render.page_tables(doc):
        for _, table, rows in parts:
            expected = _expected_rows(table)
            assert {(r["case"], r["method"]) for r in rows} == set(expected), (path.name, table["title"])
            for r in rows:
                mean, std, ratio, verdict = expected[(r["case"], r["method"])]
                where = f"{path.name}: {table['title']!r}, {r['case']!r}, {r['method']!r}"
                assert _close(r["mean"], mean) and _close(r["std"], std), where
                assert _close(r["ratio"], ratio), where
                assert r["verdict"] == verdict, where
                # and the page shows these numbers (the renderer's, equal to the derivation above)
                assert f"{bench._fmt(r['mean'])} ± {bench._fmt(r['std'])}" in page_text, where
                if verdict:
                    assert f"{verdict} vs {render.esc(r['best_peer'])}" in page_text, where


# ------------------------------------------------------------------------------------------------- tests


def test_committed_pages_are_the_rendered_results():
    start = time.process_time()  # CPU time: other jobs on a shared machine do not count
    pages = render.render_all(RESULTS_DIR, BENCH_DIR, DOC_DIR)
    assert time.process_time() - start < 10, "rendering every page must take under 10 s"
    differing = [rel for rel, text in pages.items()
                 if not (DOC_DIR / rel).exists() or (DOC_DIR / rel).read_text(encoding="utf-8") != text]
    assert not differing, f"run python benchmarks/render_docs.py: {differing} differ from the results"
    assert render.main(["--check"]) == 0


def test_check_names_a_hand_edited_page(fixture_tree, capsys):
    results, doc = fixture_tree
    argv = ["--results-dir", str(results), "--doc-dir", str(doc)]
    assert render.main(argv) == 0
    assert render.main(["--check"] + argv) == 0
    page = doc / "benchmarks" / "fixture.rst"
    page.write_text(page.read_text().replace("1.015 ± 0.01291", "0.9 ± 0.01291"))
    capsys.readouterr()
    assert render.main(["--check"] + argv) == 1
    err = capsys.readouterr().err
    assert "doc/benchmarks/fixture.rst differs" in err and "negative_results" not in err


@pytest.mark.parametrize("path", RESULTS, ids=[p.stem for p in RESULTS])
def test_saved_numbers_recomputed_from_the_raw_values(path):
    _check_numbers(path, (DOC_DIR / "benchmarks" / f"{path.stem}.rst").read_text(encoding="utf-8"))


def test_fixture_numbers_recomputed_and_verdicts_need_the_interval(fixture_tree):
    results, doc = fixture_tree
    pages = render.render_all(results, BENCH_DIR, doc)
    path = results / "fixture.json"
    _check_numbers(path, pages["benchmarks/fixture.rst"])
    rows = {(r["case"], r["method"]): r for r in render.table_rows(render.load(path)["tables"][0])}
    assert rows[("n=10", "FixtureEstimator")]["verdict"] == "loss"  # constant paired difference
    # n=20: the mean is lower than the peer's but the paired interval holds 0
    assert rows[("n=20", "FixtureEstimator")]["mean"] < 1.0
    assert rows[("n=20", "FixtureEstimator")]["verdict"] == "tie"
    # n=30 and n=40: the peer ran on one seed: unpaired whichever side is ahead, never a tie
    assert rows[("n=30", "FixtureEstimator")]["verdict"] == "unpaired"
    assert rows[("n=40", "FixtureEstimator")]["verdict"] == "unpaired"
    assert "unpaired vs one\\_seed\\_peer (ratio 10.05; 1 pair: no verdict)" in pages["benchmarks/fixture.rst"]


def test_the_seeds_column_lists_the_seeds_that_have_a_value(fixture_tree):
    # a row whose every seed failed (NaN, saved as null) has no seed: it must not read as a full row
    results, doc = fixture_tree
    lines = render.render_all(results, BENCH_DIR, doc)["benchmarks/fixture.rst"].splitlines()
    seeds = {}
    for i, line in enumerate(lines):
        if line.startswith("   * - "):
            case, method, _, cell = (x[len("   * - "):] for x in lines[i:i + 4])
            seeds[(case, method)] = cell
    assert seeds[("blobs", "broken peer")] == "none (no value)"
    assert seeds[("n=30", "one\\_seed\\_peer")] == "0"
    assert seeds[("n=10", "slow\\_peer")] == "0-3"


@pytest.mark.parametrize("path", RESULTS, ids=[p.stem for p in RESULTS])
def test_every_results_file_carries_provenance(path):
    doc = render.load(path)  # validates every field
    prov = doc["provenance"]
    assert prov["commit"] and prov["start"] <= prov["end"] and prov["wall_seconds"] > 0
    assert prov["hardware"]["cpu"] and prov["hardware"]["cores"] >= 1 and prov["versions"]["numpy"]
    assert doc["bench"] == path.stem and not doc["quick"]


def test_every_estimator_is_in_a_results_file_or_awaits_a_rerun():
    """100 % of ``all_estimators()`` in the saved results, except the estimators of benchmarks that have
    no results file yet: those must at least be measured by that (not yet re-run) benchmark script."""
    import re

    from sklearn_icml.utils.discovery import all_estimators

    names = {name for name, _ in all_estimators()}
    covered = set()
    for path in RESULTS:
        covered |= set(json.loads(path.read_text())["estimators"])
    assert covered <= names, f"results name unknown estimators: {sorted(covered - names)}"
    saved = {p.stem for p in RESULTS}
    waiting = {p.stem[len("bench_"):]: p.read_text(encoding="utf-8") for p in render.bench_scripts(BENCH_DIR)
               if p.stem[len("bench_"):] not in saved}
    in_no_benchmark = sorted(n for n in names - covered
                             if not any(re.search(rf"\b{n}\b", text) for text in waiting.values()))
    assert not in_no_benchmark, f"estimators measured by no benchmark (saved or awaiting a re-run): {in_no_benchmark}"


def _expected_negatives(doc):
    """Independent list of (kind, identifying text) of one results file."""
    out = []
    for run in [doc] + doc.get("merged_runs", []):
        for table in run["tables"]:
            for b in table.get("bars", []):
                m = b["measured"]
                m = math.nan if m is None else float(m)
                ok = {"<=": m <= b["threshold"], "<": m < b["threshold"], ">=": m >= b["threshold"],
                      ">": m > b["threshold"]}[b["op"]] and not math.isnan(m)
                if not ok:
                    out.append(("target", b["text"]))
            out += [("claim", c["text"]) for c in table.get("claims", []) if c["reproduced"] in ("no", "partly")]
            expected = _expected_rows(table)
            out += [("loss", f"{case}: {method} ") for (case, method), (_, _, _, v) in expected.items()
                    if v == "loss"]
            out += [("unpaired", f"{case}: {method} ") for (case, method), (mean, _, _, v) in expected.items()
                    if v == "unpaired" and _at_least_10_percent_worse(table, case, mean)]
    return out


def _at_least_10_percent_worse(table, case, mean):
    """Our mean against the best peer mean of the case, from the raw values (numpy), by the definition."""
    higher = table["direction"] == "higher"
    peers = []
    for r in table["rows"]:
        vals = np.array([math.nan if v["value"] is None else float(v["value"]) for v in r["values"]])
        if r["case"] == case and not r["ours"] and (~np.isnan(vals)).any():
            peers.append(np.nanmean(vals))
    best = max(peers) if higher else min(peers)
    gap = best - mean if higher else mean - best
    return bool(gap > 0 and (best == 0 or gap / abs(best) >= 0.1))


def _section(page, title):
    """The lines of the page's section headed ``title`` (up to the next section)."""
    lines = page.splitlines()

    def is_heading(i):
        return i + 1 < len(lines) and lines[i] and lines[i + 1] == "-" * len(lines[i])

    start = next(i for i in range(len(lines)) if lines[i] == title and is_heading(i))
    end = next((i for i in range(start + 2, len(lines)) if is_heading(i)), len(lines))
    return lines[start + 2:end]


@pytest.mark.parametrize("which", ["committed", "fixture"])
def test_negative_results_page_lists_exactly_the_negatives(which, fixture_tree):
    if which == "committed":
        results, doc_dir, files = RESULTS_DIR, DOC_DIR, RESULTS
        page = (DOC_DIR / "negative_results.rst").read_text(encoding="utf-8")
    else:
        results, doc_dir = fixture_tree
        files = sorted(results.glob("*.json"))
        page = render.render_all(results, BENCH_DIR, doc_dir)["negative_results.rst"]
    for path in files:
        doc = json.loads(path.read_text())
        title = render.title_of(doc["bench"], BENCH_DIR, doc_dir)
        section = _section(page, title)
        expected = _expected_negatives(doc)
        bullets = [ln for ln in section if ln.startswith("- ")]
        assert len(bullets) == len(expected), (path.name, bullets, expected)
        for kind, text in expected:
            assert any(render.esc(text) in b for b in bullets), (path.name, kind, text)
    if which == "fixture":
        # one missed target, one partly reproduced claim, one loss (n=10; n=20 is a tie, the quality row a win)
        # and the planted single-seed loss (n=30; n=40 is unpaired but ahead of the peer)
        assert sorted(kind for kind, _ in expected) == ["claim", "loss", "target", "unpaired"]
        assert any("n=30: FixtureEstimator 3.015 against one\\_seed\\_peer 0.3 (ratio 10.05; 1 pair;" in b
                   for b in bullets), bullets
        assert not any("n=40" in b for b in bullets)


def test_merge_keeps_the_cpu_rows_and_shows_both(tmp_path, fixture_tree, capsys):
    results, doc = fixture_tree
    before = json.loads((results / "fixture.json").read_text())
    gpu_dir = tmp_path / "gpu" / "results"
    _fixture_run(gpu_dir, shift=-0.4)
    gpu = json.loads((gpu_dir / "fixture.json").read_text())
    gpu["provenance"]["hardware"].update(device="cuda", gpu={"name": "FakeGPU", "driver": "1", "cuda": "12"})
    (gpu_dir / "fixture.json").write_text(json.dumps(gpu))
    (gpu_dir / "fixture.quick.json").write_text("{}")  # a quick run: never merged
    argv = ["--results-dir", str(results), "--doc-dir", str(doc)]
    assert render.main(["--merge", str(gpu_dir)] + argv) == 0
    assert render.main(["--merge", str(gpu_dir)] + argv) == 0  # twice: replaced, not duplicated
    after = json.loads((results / "fixture.json").read_text())
    assert after["tables"] == before["tables"] and after["provenance"] == before["provenance"]
    assert [m["key"] for m in after["merged_runs"]] == ["cuda: FakeGPU"]
    page = (doc / "benchmarks" / "fixture.rst").read_text()
    assert "FakeGPU (cuda)" in page and "CPU, " in page
    assert "1.015 ± 0.01291" in page and "0.615 ± 0.01291" in page  # the CPU row and the GPU row
    # merging a run of the saved hardware is refused: CPU rows are never overwritten
    cpu_again = tmp_path / "cpu"
    _fixture_run(cpu_again, shift=5.0)
    assert render.main(["--merge", str(cpu_again)] + argv) == 0
    assert "skipped: same hardware" in capsys.readouterr().out
    assert json.loads((results / "fixture.json").read_text())["tables"] == before["tables"]


@pytest.mark.parametrize("edit, field", [
    (lambda d: d.pop("provenance"), "'provenance'"),
    (lambda d: d["provenance"].pop("commit"), "'provenance.commit'"),
    (lambda d: d["provenance"]["hardware"].update(device="tpu"), "'provenance.hardware.device'"),
    (lambda d: d["tables"][0]["rows"][1]["values"][0].update(value="fast"), "'tables[0].rows[1].values[0].value'"),
    (lambda d: d["tables"][0]["bars"][0].update(met=False), "'tables[0].bars[0].met'"),
    (lambda d: d["tables"][1]["claims"][0].update(reproduced="mostly"), "'tables[1].claims[0].reproduced'"),
])
def test_a_malformed_file_fails_naming_file_and_field(fixture_tree, capsys, edit, field):
    results, doc = fixture_tree
    data = json.loads((results / "fixture.json").read_text())
    edit(data)
    (results / "fixture.json").write_text(json.dumps(data))
    assert render.main(["--results-dir", str(results), "--doc-dir", str(doc)]) == 2
    err = capsys.readouterr().err
    assert "fixture.json" in err and field in err
    with pytest.raises(render.ResultsError, match="fixture.json"):
        render.render_all(results, BENCH_DIR, doc)


def test_quick_runs_are_not_published_and_unsaved_benchmarks_are_named(fixture_tree):
    results, doc = fixture_tree
    shutil.copy(results / "fixture.json", results / "other.quick.json")
    pages = render.render_all(results, BENCH_DIR, doc)
    assert "benchmarks/other.rst" not in pages and "benchmarks/fixture.rst" in pages
    saved = {p.stem for p in RESULTS}
    for script in render.bench_scripts(BENCH_DIR):
        name = script.stem[len("bench_"):]
        if name not in saved:
            assert f"``{name}``" in pages["benchmarks.rst"] or f"benchmarks/{name}`" in pages["benchmarks.rst"]
    assert "not yet saved" in pages["benchmarks.rst"] or not ({p.stem[6:] for p in render.bench_scripts()} - saved)
    # the output depends on the results only: rendering twice gives the same pages
    assert render.render_all(results, BENCH_DIR, doc) == pages


def test_a_hand_written_page_is_never_overwritten(fixture_tree, capsys):
    results, doc = fixture_tree
    page = doc / "benchmarks" / "fixture.rst"
    page.write_text("Fixture\n=======\n\nProse written by hand.\n")
    argv = ["--results-dir", str(results), "--doc-dir", str(doc)]
    assert render.main(argv) == 1
    assert page.read_text() == "Fixture\n=======\n\nProse written by hand.\n"
    assert "move its prose" in capsys.readouterr().err
    assert "page awaiting its prose" in (doc / "benchmarks.rst").read_text()
    assert render.main(["--check"] + argv) == 1
    (doc / "benchmarks" / "_text").mkdir()
    (doc / "benchmarks" / "_text" / "fixture.rst").write_text("Fixture\n=======\n\nProse moved.\n")
    assert render.main(argv) == 0 and render.main(["--check"] + argv) == 0
    assert "Prose moved." in page.read_text() and "bench-fixture-t1" in page.read_text()


def _git(cwd, *cmd):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false",
                    *cmd], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")
def test_git_state_sees_uncommitted_changes_and_no_checkout(tmp_path):
    tree = tmp_path / "tree"
    for rel in ("sklearn_icml/core.py", "benchmarks/bench_x.py", "benchmarks/results/x.json", "README.md"):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text("v1\n")
    assert bench.git_state(tree) == (None, None)  # not a checkout (yet)
    _git(tree, "init", "-q")
    _git(tree, "add", ".")
    _git(tree, "commit", "-qm", "first")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True, text=True).stdout.strip()
    assert bench.git_state(tree) == (head, False)
    (tree / "benchmarks/results/x.json").write_text("v2\n")  # a saved result not committed yet: still clean
    (tree / "README.md").write_text("v2\n")
    assert bench.git_state(tree) == (head, False)
    (tree / "sklearn_icml/core.py").write_text("v2\n")
    assert bench.git_state(tree) == (head, True)
    # a copied tree inside another checkout is not that checkout: no commit
    copy = tree / "sub"
    shutil.copytree(tree / "sklearn_icml", copy / "sklearn_icml")
    assert bench.git_state(copy) == (None, None)


@pytest.mark.parametrize("git, message", [
    ((FIXTURE_COMMIT, True), "run from a working tree with uncommitted changes to commit 0123456789"),
    ((None, None), "run outside a git checkout"),
])
def test_check_refuses_a_new_result_from_an_uncommitted_tree(tmp_path, capsys, git, message):
    results, doc = tmp_path / "results", tmp_path / "doc"
    (doc / "benchmarks").mkdir(parents=True)
    _fixture_run(results, git=git)
    argv = ["--results-dir", str(results), "--doc-dir", str(doc)]
    assert render.main(argv) == 1  # the pages are written (honestly), the run is refused for publishing
    assert render.main(["--check"] + argv) == 1
    err = capsys.readouterr().err
    assert f"fixture.json: provenance: {message}" in err
    page = (doc / "benchmarks" / "fixture.rst").read_text()
    assert message.split(" to commit")[0] in page and "dirty" not in page
    # the same provenance in an older (schema 1) file is rendered as it is and not refused
    data = json.loads((results / "fixture.json").read_text())
    (results / "fixture.json").write_text(json.dumps(dict(data, schema=1)))
    assert render.main(argv) == 0 and render.main(["--check"] + argv) == 0
    # a merged run (another machine's) from an uncommitted tree is refused as well
    _fixture_run(results)
    gpu_dir = tmp_path / "gpu"
    _fixture_run(gpu_dir, git=git)
    gpu = json.loads((gpu_dir / "fixture.json").read_text())
    gpu["provenance"]["hardware"].update(device="cuda", gpu={"name": "FakeGPU", "driver": "1", "cuda": "12"})
    (gpu_dir / "fixture.json").write_text(json.dumps(gpu))
    capsys.readouterr()
    assert render.main(["--merge", str(gpu_dir)] + argv) == 1
    assert "fixture.json: merged_runs[0] (cuda: FakeGPU): " + message in capsys.readouterr().err


def _expected_found(doc):
    """(targets met, targets, {verdict: count}) of a results file, from the raw values (independent derivation)."""
    met = total = 0
    counts = {"win": 0, "tie": 0, "loss": 0, "unpaired": 0}
    for run in [doc] + doc.get("merged_runs", []):
        for table in run["tables"]:
            for b in table.get("bars", []):
                m = math.nan if b["measured"] is None else float(b["measured"])
                total += 1
                met += (not math.isnan(m)) and {"<=": m <= b["threshold"], "<": m < b["threshold"],
                                                 ">=": m >= b["threshold"], ">": m > b["threshold"]}[b["op"]]
            for (_, _, _, verdict) in _expected_rows(table).values():
                if verdict:
                    counts[verdict] += 1
    return met, total, counts


def _opening(page):
    """The first paragraph under the page's title."""
    lines = page.splitlines()
    i = next(i for i in range(1, len(lines)) if lines[i] and set(lines[i]) == {"="} and len(lines[i - 1]) > 0)
    return lines[i + 2]


@pytest.mark.parametrize("which", ["committed", "fixture"])
def test_each_page_opens_with_what_we_found(which, fixture_tree):
    if which == "committed":
        files = RESULTS
        pages = {p.stem: (DOC_DIR / "benchmarks" / f"{p.stem}.rst").read_text(encoding="utf-8") for p in files}
    else:
        results, doc_dir = fixture_tree
        files = [results / "fixture.json"]
        pages = {"fixture": render.render_all(results, BENCH_DIR, doc_dir)["benchmarks/fixture.rst"]}
    for path in files:
        page = pages[path.stem]
        opening = _opening(page)
        assert opening.startswith("**What we found.**"), (path.name, opening)
        assert page.index("**What we found.**") < page.index("\nTables\n------\n")
        met, total, counts = _expected_found(json.loads(path.read_text()))
        if total:
            assert (f"All {total} targets met" if met == total and total > 1 else f"{met} of {total} target") in \
                opening or (total == 1 and met == 1 and "1 target met" in opening), (path.name, opening)
        if sum(counts.values()):
            assert f"{counts['win']} win" in opening and f"{counts['tie']} tie" in opening, (path.name, opening)
            assert f"{counts['loss']} loss" in opening and f"{counts['unpaired']} unpaired" in opening
    if which == "fixture":
        # the planted single-seed loss (10x) is the largest gap against us, named with its figures
        assert "1 of 2 targets met" in opening and "1 win, 1 tie, 1 loss and 2 unpaired" in opening
        assert "Largest unpaired row against us: Fit time, n=2\\*10^4, n=30: FixtureEstimator 3.015 against " \
               "one\\_seed\\_peer 0.3 (ratio 10.05)" in opening, opening


# ------------------------------------------------------------------------------------------ the methods table


def _papers():
    import tomllib

    return tomllib.loads((DOC_DIR / "benchmarks" / "_text" / "methods.toml").read_text(encoding="utf-8"))["paper"]


def _raw_figure(spec, paper, saved):
    """A headline figure from the raw saved values (targets, raw rows, counts), by the definitions."""
    kind = spec["kind"]
    if kind == "count":
        total = 0
        for doc in saved.values():
            expected = _expected_negatives(doc)
            if spec["what"] in ("loss", "unpaired"):
                # every row with that verdict (listed or not), from the independent derivation
                total += sum(v == spec["what"] for run in [doc] + doc.get("merged_runs", [])
                             for table in run["tables"] for (_, _, _, v) in _expected_rows(table).values())
            elif spec["what"] == "missed":
                total += sum(kind_ == "target" for kind_, _ in expected)
            else:
                total += sum(kind_ == "claim" for kind_, _ in expected)
        return total
    doc = saved[paper["bench"]]
    if kind == "seeds" and "table" not in spec:
        return len(doc["provenance"]["seeds"])
    runs = [doc] + doc.get("merged_runs", [])
    if kind == "seeds":
        found = [len({v["seed"] for v in row["values"]}) for run in runs for t in run["tables"]
                 if t["title"].startswith(spec["table"]) for row in t["rows"]
                 if (row["case"], row["method"]) == (spec["case"], spec["method"])]
        assert len(found) == 1, (paper["code"], spec, found)
        return found[0]
    if kind in ("target", "threshold"):
        found = [b["measured" if kind == "target" else "threshold"] for run in runs for t in run["tables"]
                 for b in t.get("bars", []) if b["text"].startswith(spec["text"])]
        found = [math.nan if v is None else float(v) for v in found]
    else:
        found = []
        for run in runs:
            for table in run["tables"]:
                if table["title"].startswith(spec["table"]):
                    mean, _, ratio, _ = _expected_rows(table)[(spec["case"], spec["method"])]
                    found.append(mean if kind == "mean" else ratio)
    if "index" in spec:
        found = found[spec["index"]:spec["index"] + 1]
    assert len(found) == 1, (paper["code"], spec, found)
    return found[0] * spec.get("scale", 1)


def test_methods_table_figures_are_the_saved_results():
    saved = {p.stem: json.loads(p.read_text()) for p in RESULTS}
    index = (DOC_DIR / "index.rst").read_text(encoding="utf-8")
    papers = _papers()
    assert [p["code"] for p in papers] == [f"S{i}" for i in range(1, 20)]
    for paper in papers:
        values = {name: _raw_figure(spec, paper, saved) for name, spec in paper.get("figures", {}).items()}
        headline = paper["headline"].format(**values)
        assert headline in index, (paper["code"], headline)
        if paper.get("bench"):
            assert (RESULTS_DIR / f"{paper['bench']}.json").exists(), paper["code"]
            assert f"{headline} (:doc:`benchmarks/{paper['bench']}`)" in index
    # every headline figure comes from the results: a headline with no figure would be hand-written
    assert all(paper.get("figures") for paper in papers)


def test_methods_table_links_every_public_name_to_its_api_page():
    import importlib

    index = (DOC_DIR / "index.rst").read_text(encoding="utf-8")
    for paper in _papers():
        for name in paper.get("names", []):
            family, obj = name.rsplit(".", 1)
            module = importlib.import_module(f"sklearn_icml.{family}")
            assert obj in module.__all__, name
            assert re.search(rf"^\s{{3}}{obj}\s*$", (DOC_DIR / "api" / f"{family}.rst").read_text(), flags=re.M), name
            role = "class" if isinstance(getattr(module, obj), type) else "func"
            assert f":{role}:`~sklearn_icml.{family}.{obj}`" in index, (paper["code"], name, role)


def test_a_changed_result_changes_the_start_page(tmp_path, capsys):
    results = tmp_path / "results"
    shutil.copytree(RESULTS_DIR, results)
    data = json.loads((results / "private_kmeans.json").read_text())
    bar = next(b for t in data["tables"] for b in t["bars"]
               if b["text"].startswith("blobs 2-D: median cost of PrivateKMeans / diffprivlib's"))
    bar["measured"] = 0.123
    (results / "private_kmeans.json").write_text(json.dumps(data))
    pages = render.render_all(results, BENCH_DIR, DOC_DIR)
    assert "0.12x diffprivlib's" in pages["index.rst"]
    assert render.main(["--check", "--results-dir", str(results), "--doc-dir", str(DOC_DIR)]) == 1
    assert "doc/index.rst differs" in capsys.readouterr().err
    # a figure that no longer finds its target stops the render, naming the paper and the figure
    bar["text"] = "renamed"
    (results / "private_kmeans.json").write_text(json.dumps(data))
    with pytest.raises(render.ResultsError, match=r"methods.toml: S3, figure 'dpl'"):
        render.render_all(results, BENCH_DIR, DOC_DIR)


def test_tables_kept_from_other_runs_name_their_run_and_commit(tmp_path, capsys):
    """A script's parts: the second run rewrites one table and keeps the other; each table names its run."""
    results, doc = tmp_path / "results", tmp_path / "doc"
    (doc / "benchmarks").mkdir(parents=True)
    part_of = {"Fit time, n=2*10^4": "race", "Quality": "quality"}.get
    argv = ["--results-dir", str(results), "--doc-dir", str(doc)]

    def second_run(git):
        with mock.patch.object(bench, "git_state", return_value=git):
            args = bench.bench_args("Fixture benchmark.", ["--results-dir", str(results), "--seeds", "3"],
                                    name="fixture")
        kept, estimators = bench.kept_tables(args, part_of, ["quality"])
        quality = bench.Table("Quality", "ARI", higher_is_better=True)
        for s in args.seeds:
            quality.add("blobs", "FixtureEstimator", 0.95 - 0.01 * s, ours=True, seed=s)
            quality.add("blobs", "peer", 0.8 - 0.01 * s, seed=s)
        with open(os.devnull, "w") as devnull:
            bench.emit([quality], args, file=devnull, estimators=["FixtureEstimator"])
        bench.merge_kept(args, kept, estimators, ["race", "quality"], part_of)

    _fixture_run(results, git=("a" * 40, True))  # the first run: from a tree with uncommitted changes
    second_run(("b" * 40, False))  # the second: clean, keeps the first run's race table
    saved = json.loads((results / "fixture.json").read_text())
    assert [t["title"] for t in saved["tables"]] == ["Fit time, n=2*10^4", "Quality"]
    assert saved["tables"][0]["run"]["commit"] == "a" * 40 and saved["tables"][0]["run"]["dirty"] is True
    assert saved["tables"][1]["run"]["commit"] == "b" * 40 and saved["provenance"]["commit"] == "b" * 40
    capsys.readouterr()
    assert render.main(argv) == 1 and render.main(["--check"] + argv) == 1
    assert ("fixture.json: tables[0]: run from a working tree with uncommitted changes to commit aaaaaaaaaa"
            in capsys.readouterr().err)
    page = (doc / "benchmarks" / "fixture.rst").read_text()
    assert page.count("Run of this table: ") == 2
    assert "commit aaaaaaaaaa, run from a working tree with uncommitted changes" in page
    assert "commit bbbbbbbbbb" in page
    summary = (doc / "benchmarks.rst").read_text()
    assert "1 of 2 tables from other runs (1 with uncommitted changes)" in summary
    # once the race table is re-run from a clean commit too, the file is published
    _fixture_run(results, git=("c" * 40, False))
    assert render.main(argv) == 0 and render.main(["--check"] + argv) == 0
    assert "Run of this table" not in (doc / "benchmarks" / "fixture.rst").read_text()
