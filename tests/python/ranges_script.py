"""nsightkit.range as a context manager and a decorator, for run_package.py's api case.

usage: ranges_script.py [EXIT_STATUS]
"""

import sys

import nsightkit


@nsightkit.range()
def load():
    pass


for _ in range(5):
    with nsightkit.range("train_step"):
        load()
        with nsightkit.range("compute"):
            pass
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
