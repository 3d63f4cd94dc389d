"""``python -m adaptqr bench|check|explain``: the same as the ``adaptqr`` console script."""

import sys

from adaptqr.cli import main

sys.exit(main())
