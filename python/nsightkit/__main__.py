"""`python -m nsightkit ...`: the same as the `nsightkit` console script."""

import sys

from .command import main

sys.exit(main())
