"""Sphinx configuration for sklearn-icml (offline by default: no intersphinx)."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("MPLBACKEND", "Agg")

import sklearn_icml  # noqa: E402

project = "sklearn-icml"
author = "The sklearn-icml developers"
copyright = "2026, The sklearn-icml developers"
release = sklearn_icml.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "generated/backreferences", "sg_execution_times.rst", "auto_examples/*.ipynb",
                    "auto_examples/**/*.ipynb", "benchmarks/_text"]
html_theme = "pydata_sphinx_theme"
html_title = f"sklearn-icml {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    # the benchmark pages (benchmarks, benchmarks/*) and negative_results give the width of the page's
    # table of contents to their tables; patterns must not overlap (the theme warns)
    "secondary_sidebar_items": {"[!bn]**": ["page-toc", "sourcelink"], "n[!e]**": ["page-toc", "sourcelink"]},
}
html_static_path = ["_static"]
html_css_files = ["sklearn_icml.css"]
# MathJax served from the built docs (doc/_static/mathjax, MathJax 3.2.2, Apache-2.0): math renders
# offline. The SVG output embeds its glyphs and the -full build holds every TeX extension, so
# nothing is fetched at view time.
mathjax_path = "mathjax/tex-svg-full.js"

autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": True}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# numpydoc validation of every public docstring; all checks except these
numpydoc_validation_checks = {"all", "ES01", "SA01", "EX01", "GL08", "RT02"}
numpydoc_validation_exclude = {
    # inherited from scikit-learn or Python, documented there
    r"\.get_params$", r"\.set_params$", r"\.set_output$", r"\.score$", r"\.fit_transform$",
    r"\.fit_predict$", r"\.get_metadata_routing$", r"\.set_\w+_request$", r"\.__init__$",
    r"\.get_feature_names_out$", r"\.__sklearn_tags__$", r"\.__sklearn_is_fitted__$",
    # a named tuple's generated members (count, index, the field aliases)
    r"\.Segment\.\w+$",
    r"\.PrivateBounds\.\w+$",
    # inherited from Python's BaseException by the warning classes
    r"\.add_note$", r"\.with_traceback$",
}

ONLINE = bool(os.environ.get("SKLEARN_ICML_DOCS_ONLINE"))
intersphinx_mapping = (
    {
        "sklearn": ("https://scikit-learn.org/stable", None),
        "numpy": ("https://numpy.org/doc/stable", None),
        "python": ("https://docs.python.org/3", None),
        "torch": ("https://pytorch.org/docs/stable", None),
    }
    if ONLINE
    else {}
)
if not ONLINE:
    # docstrings inherited from scikit-learn point into its glossary and user guide
    suppress_warnings = ["ref.term", "ref.ref"]

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "doc_module": ("sklearn_icml",),
    "backreferences_dir": "generated/backreferences",
    "reference_url": {"sklearn_icml": None},
    "abort_on_example_error": True,
    "download_all_examples": False,
    "within_subsection_order": "FileNameSortKey",
    "remove_config_comments": True,
    "show_memory": False,
}
