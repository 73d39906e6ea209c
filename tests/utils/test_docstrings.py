"""The shared docstring pieces: substitution, indentation, typos, and no marker left in the package."""

import inspect

import pytest

from sklearn_icml.utils._docstrings import DOC_PIECES, fill_doc
from sklearn_icml.utils.discovery import all_estimators


def test_marker_line_becomes_the_piece_indented_like_it():
    @fill_doc
    class Documented:
        """Summary.

        References
        ----------
        {{chatbot_arena_reference}}
        """

    lines = Documented.__doc__.splitlines()
    start = next(i for i, line in enumerate(lines) if ".. [1]" in line)
    indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
    piece = DOC_PIECES["chatbot_arena_reference"].splitlines()
    assert [line[len(indent):] for line in lines[start:start + len(piece)]] == piece
    assert all(line.startswith(indent) for line in lines[start:start + len(piece)])
    assert "{{" not in Documented.__doc__


def test_an_unknown_piece_fails_at_definition():
    with pytest.raises(KeyError, match="no_such_piece"):
        @fill_doc
        def documented():
            """Summary.

            {{no_such_piece}}
            """


def test_no_marker_is_left_in_any_public_docstring():
    for name, est in all_estimators():
        assert "{{" not in (inspect.getdoc(est) or ""), name
