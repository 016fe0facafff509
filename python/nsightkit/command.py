"""The `nsightkit` console script: becomes the bundled nsightkit program (exec), so signals, the
exit status and the program's own view of its path (it finds its NVTX tool libraries beside it)
are exactly the C++ command's (docs/profile.md)."""

import os
import sys

from .locations import get_command


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        program = get_command()
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(program, ["nsightkit"] + args)


if __name__ == "__main__":
    sys.exit(main())
