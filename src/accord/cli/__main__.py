"""``python -m accord.cli``: the same as the ``accord`` command."""

import sys

from . import main

sys.exit(main())
