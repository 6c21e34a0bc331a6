"""``python -m codec``: the ``codec`` command."""

import sys

from codec.cli import main

if __name__ == "__main__":
    sys.exit(main())
