"""`python -m loadgate.cli`: the same command line as the `loadgate` script."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
