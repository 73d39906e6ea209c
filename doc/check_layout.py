"""Check the built docs' layout in a real browser (headless Chromium).

Usage::

    python doc/check_layout.py [BUILD_DIR]      # default doc/_build/html
    python doc/check_layout.py --self-test      # proves the check fails on planted faults

Every checked page is opened in a frame the size of a 1,400 x 900 px window, after its math is
typeset, and fails when

* the page is wider than the window (``document.documentElement.scrollWidth`` beyond the
  visible width), or the article is wider than its column (the theme scrolls the article
  sideways rather than the page), naming the elements that stick out;
* a table is wider than the content and scrolls sideways;
* math is left unrendered: a ``math`` element that MathJax did not typeset, raw ``\\(``, ``\\[``
  or ``$$`` in the text outside code, or a MathJax error node.

Display equations that scroll inside their own box are listed, not failed.

The pages: the start page, the user guide and every page it lists, the benchmark summary, every
benchmark page, the negative results, the API reference (its family pages and every generated
page). The build directory is served on 127.0.0.1 by this script; Chromium loads a harness page
that opens the pages one by one and posts its findings back, so nothing but the Python standard
library and a ``chromium`` binary is needed (Debian: ``apt-get install chromium``; as root it
runs with ``--no-sandbox``). Exit status 0 when every page passes, 1 otherwise.
"""

import argparse
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HARNESS = "__layout_check__.html"
RESULT = "/__layout_check__/result"

# Runs inside the harness page; each page is opened in a same-origin iframe of the window's size.
HARNESS_HTML = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>layout check</title>
<style>body { margin: 0 } iframe { border: 0; width: __WIDTH__px; height: __HEIGHT__px; display: block }</style>
</head><body><script>
const PAGES = __PAGES__;
const post = (data) => fetch("__RESULT__", {method: "POST", body: JSON.stringify(data)});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function describe(el) {
  let name = el.tagName.toLowerCase();
  if (el.id) name += "#" + el.id;
  if (el.classList.length) name += "." + Array.from(el.classList).slice(0, 3).join(".");
  const text = (el.textContent || "").replace(/\\s+/g, " ").trim().slice(0, 60);
  return text ? name + ' "' + text + '"' : name;
}

function inside(node, selector) {
  const el = node.nodeType === 1 ? node : node.parentElement;
  return el !== null && el.closest(selector) !== null;
}

function measure(w) {
  const d = w.document, root = d.documentElement, failures = [], notes = [];
  if (root.scrollWidth > root.clientWidth + 1) {
    failures.push("page " + root.scrollWidth + " px wide in a " + root.clientWidth + " px window");
  }
  const article = d.querySelector(".bd-article-container") || d.body;
  if (article.scrollWidth > article.clientWidth + 1) {
    const limit = article.getBoundingClientRect().right;
    const culprits = [];
    for (const el of article.querySelectorAll("*")) {
      if (el.getBoundingClientRect().right > limit + 1 && !culprits.some((c) => c.contains(el))) {
        culprits.push(el);
        if (culprits.length >= 3) break;
      }
    }
    failures.push("article " + article.scrollWidth + " px wide in its " + article.clientWidth
                  + " px column; sticking out: " + culprits.map(describe).join("; "));
  }
  for (const table of d.querySelectorAll("table")) {
    const box = table.parentElement;
    if (box.scrollWidth > box.clientWidth + 1 || table.getBoundingClientRect().right
        > article.getBoundingClientRect().right + 1) {
      failures.push("table " + Math.round(table.getBoundingClientRect().width) + " px wide in "
                    + box.clientWidth + " px: " + describe(table));
    }
  }
  const hasMath = d.querySelector(".math") !== null;
  if (hasMath && !w.MathJax) failures.push("math on the page but MathJax not loaded");
  for (const el of d.querySelectorAll(".math")) {
    if (el.querySelector("mjx-container") === null) failures.push("unrendered math: " + describe(el));
  }
  for (const el of d.querySelectorAll("mjx-merror, [data-mml-node='merror'], [data-mjx-error]")) {
    failures.push("MathJax error: " + (el.getAttribute("data-mjx-error") || describe(el)));
  }
  const walker = d.createTreeWalker(d.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.nodeValue;
    if (/\\\\\\(|\\\\\\[|\\$\\$/.test(text)
        && !inside(node, "pre, code, kbd, samp, script, style, textarea, mjx-container, .highlight")) {
      failures.push("raw TeX in the text: " + JSON.stringify(text.trim().slice(0, 80)));
    }
  }
  for (const el of d.querySelectorAll("div.math, mjx-container[display='true']")) {
    if (el.scrollWidth > el.clientWidth + 1) notes.push("display math scrolls: " + describe(el));
  }
  return {failures: Array.from(new Set(failures)), notes, width: root.scrollWidth};
}

async function check(url) {
  const frame = document.createElement("iframe");
  const loaded = new Promise((r) => frame.addEventListener("load", r, {once: true}));
  frame.src = url;
  document.body.replaceChildren(frame);
  await loaded;
  const w = frame.contentWindow;
  for (let i = 0; i < 100 && w.document.querySelector(".math") && !(w.MathJax && w.MathJax.startup
       && w.MathJax.startup.promise); i++) await sleep(50);
  if (w.MathJax && w.MathJax.startup && w.MathJax.startup.promise) await w.MathJax.startup.promise;
  await w.document.fonts.ready;
  await sleep(50);
  return measure(w);
}

(async () => {
  for (const url of PAGES) {
    let result;
    try { result = await check(url); } catch (e) { result = {failures: ["harness error: " + e], notes: []}; }
    result.page = url;
    await post(result);
  }
  await post({done: true});
})();
</script></body></html>
"""


def pages_to_check(root):
    """The pages of a built site that the check opens, as paths relative to ``root``."""
    patterns = ["index.html", "user_guide.html", "conventions.html", "modules/*.html", "benchmarks.html",
                "benchmarks/*.html", "negative_results.html", "api.html", "api/*.html", "generated/*.html"]
    found = []
    for pattern in patterns:
        found += sorted(str(p.relative_to(root)) for p in root.glob(pattern))
    return found


def _handler(root, harness, results, done):
    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

        def do_GET(self):  # noqa: N802 (http.server's name)
            if self.path == "/" + HARNESS:
                body = harness.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            else:
                super().do_GET()

        def do_POST(self):  # noqa: N802
            data = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(204)
            self.end_headers()
            if data.get("done"):
                done.set()
            else:
                results.append(data)

        def log_message(self, *args):
            pass

    return Handler


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise SystemExit("check_layout: no chromium on PATH (Debian: apt-get install chromium)")


def run_check(root, pages, *, width=1400, height=900, timeout=600, chromium=None):
    """Open ``pages`` (relative to ``root``) in headless Chromium; return one result dict per page."""
    root = Path(root).resolve()
    results, done = [], threading.Event()
    harness = (HARNESS_HTML.replace("__PAGES__", json.dumps(["/" + p for p in pages]))
               .replace("__WIDTH__", str(width)).replace("__HEIGHT__", str(height)).replace("__RESULT__", RESULT))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(root, harness, results, done))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/{HARNESS}"
    profile = tempfile.mkdtemp(prefix="check-layout-profile-")
    args = [chromium or find_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}",
            f"--window-size={width},{height}", url]
    browser = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + timeout
        while not done.wait(0.2):
            if browser.poll() is not None:
                raise SystemExit(f"check_layout: chromium exited with status {browser.returncode}")
            if time.monotonic() > deadline:
                raise SystemExit(f"check_layout: timed out after {timeout} s with {len(results)} of "
                                 f"{len(pages)} pages checked")
    finally:
        browser.terminate()
        try:
            browser.wait(10)
        except subprocess.TimeoutExpired:
            browser.kill()
        server.shutdown()
        server.server_close()
        shutil.rmtree(profile, ignore_errors=True)
    return results


def report(results, out=sys.stdout):
    """Print the findings; return the number of failing pages."""
    failing = 0
    for result in results:
        for note in result["notes"]:
            print(f"note  {result['page']}: {note}", file=out)
        if result["failures"]:
            failing += 1
            for failure in result["failures"]:
                print(f"FAIL  {result['page']}: {failure}", file=out)
    print(f"{len(results)} pages checked, {failing} failing", file=out)
    return failing


_PLANTED = {
    "good.html": '<p>Math: <span class="math">\\(x^2 + \\frac{1}{2}\\)</span>.</p>'
                 '<div class="math">\\[\\sum_k w_k\\]</div><pre>regex \\( kept in code</pre>',
    "wide.html": '<p>A paragraph.</p><div style="width: 2000px">a block wider than the window</div>',
    "wide_table.html": '<div style="overflow-x: auto"><table><tr>'
                       + "".join(f"<td>column_{i}_with_a_long_unbreakable_name</td>" for i in range(40))
                       + "</tr></table></div>",
    "no_mathjax.html": '<p>Math: <span class="math">\\(x^2\\)</span>.</p>',
    # text a typesetter never saw (no MathJax on the page): raw TeX left in the text
    "raw_tex.html": "<p>Inline math outside a math element: $$x^2$$.</p>",
    "tex_error.html": '<p>Math: <span class="math">\\(\\left( x\\)</span>.</p>',
}


def self_test(chromium=None):
    """Run the check on planted pages: the good one must pass, each planted fault must fail."""
    mathjax = Path(__file__).resolve().parent / "_static" / "mathjax" / "tex-svg-full.js"
    with tempfile.TemporaryDirectory(prefix="check-layout-") as tmp:
        root = Path(tmp)
        shutil.copy(mathjax, root / "mathjax.js")
        for name, body in _PLANTED.items():
            script = "" if name in ("no_mathjax.html", "raw_tex.html") else '<script defer src="mathjax.js"></script>'
            (root / name).write_text(f'<!DOCTYPE html><html><head><meta charset="utf-8">{script}</head>'
                                     f"<body>{body}</body></html>")
        results = {r["page"].lstrip("/"): r for r in run_check(root, list(_PLANTED), chromium=chromium,
                                                               timeout=120)}
    report(results.values())
    wrong = [name for name in _PLANTED if bool(results[name]["failures"]) != (name != "good.html")]
    if wrong:
        print(f"self-test FAILED: wrong verdict on {wrong}")
        return 1
    print("self-test passed: the planted page passes, every planted fault fails")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build_dir", nargs="?", default=str(Path(__file__).resolve().parent / "_build" / "html"))
    parser.add_argument("--self-test", action="store_true", help="check planted faults and exit")
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--timeout", type=float, default=600, help="seconds for the whole check")
    parser.add_argument("--chromium", help="the browser binary (default: chromium on PATH)")
    parser.add_argument("--pages", nargs="*", help="pages relative to the build directory (default: all)")
    args = parser.parse_args(argv)
    if args.self_test:
        return self_test(args.chromium)
    root = Path(args.build_dir)
    if not (root / "index.html").exists():
        raise SystemExit(f"check_layout: no built docs in {root} (build them with sphinx first)")
    pages = args.pages or pages_to_check(root)
    start = time.monotonic()
    results = run_check(root, pages, width=args.width, height=args.height, timeout=args.timeout,
                        chromium=args.chromium)
    failing = report(results)
    print(f"in {time.monotonic() - start:.0f} s at {args.width} x {args.height} px")
    return 1 if failing else 0


if __name__ == "__main__":
    os.environ.setdefault("LC_ALL", "C.UTF-8")
    sys.exit(main())
