#!/usr/bin/env python3
"""Writes the C++ snippets of documentation pages that use a given word (e.g. CaptureWindow) into
files, one translation unit each, so the build compiles them exactly as written.

usage: doc_snippets.py <word> <output dir> <page.md>...
Prints the files written, separated by ';' (a CMake list). A page without such a snippet is an
error: the check would otherwise pass by checking nothing.
"""
import pathlib
import re
import sys


def main() -> int:
    word, out = sys.argv[1], pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.cpp"):
        old.unlink()
    written = []
    for page in map(pathlib.Path, sys.argv[3:]):
        blocks = re.findall(r"^```cpp\n(.*?)^```", page.read_text(), re.S | re.M)
        chosen = [b for b in blocks if word in b]
        if not chosen:
            print(f"{page}: no ```cpp snippet uses {word}", file=sys.stderr)
            return 1
        for i, block in enumerate(chosen, 1):
            f = out / f"{page.stem}_{i}.cpp"
            f.write_text(f"// {page.name}, C++ snippet {i} that uses {word} (generated)\n" + block)
            written.append(str(f))
    print(";".join(written), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
