"""``python -m sklearn_icml tour``: see :mod:`sklearn_icml._tour`."""

import sys

from ._tour import main

if __name__ == "__main__":
    sys.exit(main())
