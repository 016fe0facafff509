#!/usr/bin/env python3
"""Prints the include directory that holds nvtx3/nvtx3.hpp (NVTX3's C++ header), for nsightkit.

nsightkit needs NVTX3's headers only (no library). They come, in this order, from:
  1. your own copy: the environment variable NSIGHTKIT_NVTX3_INCLUDE_DIR (a directory holding
     nvtx3/nvtx3.hpp, e.g. NVIDIA/NVTX's c/include);
  2. the CUDA toolkit, when it ships nvtx3/nvtx3.hpp (CUDA 12.9 and later): CUDAToolkit_ROOT,
     CUDA_PATH, CUDA_HOME, the toolkit of `nvcc` on PATH, /usr/local/cuda;
  3. the `nvidia-nvtx` package from PyPI (pip install nvidia-nvtx), found in this Python or in
     the directory named by NSIGHTKIT_NVTX3_PYPI_DIR (where pip installed it: site-packages, or
     the directory given to `pip install --target`).
Without any of them it exits with status 1 and says how to get one.

  python3 nsightkit-find-nvtx3.py                     # the directory, by the order above
  python3 nsightkit-find-nvtx3.py --source pypi       # only the PyPI package (nsightkit's CMake)
  python3 nsightkit-find-nvtx3.py --define-variable   # --define-variable=nvtx3_includedir=<dir>

The last form is for pkg-config, which cannot search:
  pkg-config $(python3 "$(pkg-config --variable=nvtx3_finder nsightkit)" --define-variable) \\
             --cflags nsightkit
Standard library only; Python 3.8 or newer.
"""
import argparse
import glob
import os
import re
import shutil
import sys

HEADER = os.path.join("nvtx3", "nvtx3.hpp")
PYPI_DISTRIBUTIONS = ("nvidia-nvtx", "nvidia-nvtx-cu13", "nvidia-nvtx-cu12")


def has_header(include_dir):
    return bool(include_dir) and os.path.isfile(os.path.join(include_dir, HEADER))


def toolkit_version(root):
    """The toolkit's version from version.json / version.txt / cuda.h, or None."""
    try:
        with open(os.path.join(root, "version.json")) as f:
            m = re.search(r'"cuda"\s*:\s*\{[^}]*"version"\s*:\s*"([0-9.]+)"', f.read())
            if m:
                return m.group(1)
    except OSError:
        pass
    try:
        with open(os.path.join(root, "version.txt")) as f:
            m = re.search(r"CUDA Version ([0-9.]+)", f.read())
            if m:
                return m.group(1)
    except OSError:
        pass
    try:
        with open(os.path.join(root, "include", "cuda.h")) as f:
            m = re.search(r"#define CUDA_VERSION (\d+)", f.read())
            if m:
                v = int(m.group(1))
                return f"{v // 1000}.{v % 1000 // 10}"
    except OSError:
        pass
    return None


def toolkit_roots():
    roots = []
    for var in ("CUDAToolkit_ROOT", "CUDA_PATH", "CUDA_HOME"):
        if os.environ.get(var):
            roots.append(os.environ[var])
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))))
    roots.append("/usr/local/cuda")
    seen, unique = set(), []
    for r in roots:
        key = os.path.realpath(r)
        if key not in seen and os.path.isdir(r):
            seen.add(key)
            unique.append(r)
    return unique


def find_in_toolkit(notes):
    for root in toolkit_roots():
        candidates = [os.path.join(root, "include")]
        candidates += sorted(glob.glob(os.path.join(root, "targets", "*", "include")))
        for inc in candidates:
            if has_header(inc):
                return inc
        if any(os.path.isdir(os.path.join(inc, "nvtx3")) for inc in candidates):
            version = toolkit_version(root)
            notes.append(f"the CUDA toolkit {version or '(version unknown)'} at {root} has NVTX3's C "
                         f"headers but no {HEADER} (the toolkit ships it from CUDA 12.9 on)")
        else:
            notes.append(f"the CUDA toolkit at {root} has no nvtx3/ headers")
    return None


def find_in_pypi_dir(base):
    """A directory pip installed into, a package directory (nvidia/cu13), or an include dir."""
    for inc in [base, os.path.join(base, "include")]:
        if has_header(inc):
            return inc
    hits = sorted(glob.glob(os.path.join(base, "nvidia", "*", "include", "nvtx3", "nvtx3.hpp")))
    hits += sorted(glob.glob(os.path.join(base, "*", "include", "nvtx3", "nvtx3.hpp")))
    return os.path.dirname(os.path.dirname(hits[0])) if hits else None


def find_in_pypi(notes):
    hint = os.environ.get("NSIGHTKIT_NVTX3_PYPI_DIR")
    if hint:
        found = find_in_pypi_dir(hint)
        if found:
            return found
        notes.append(f"NSIGHTKIT_NVTX3_PYPI_DIR={hint} holds no {HEADER} (looked in it, its include/ "
                     "and nvidia/*/include/)")
    try:
        from importlib import metadata
    except ImportError:  # Python < 3.8
        notes.append(f"Python {sys.version.split()[0]} is too old to look for installed packages")
        return None
    for name in PYPI_DISTRIBUTIONS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for f in dist.files or []:
            if str(f).replace("\\", "/").endswith("include/nvtx3/nvtx3.hpp"):
                header = os.path.realpath(str(dist.locate_file(f)))
                if os.path.isfile(header):
                    return os.path.dirname(os.path.dirname(header))
        notes.append(f"the PyPI package {name} {dist.version} is installed but holds no {HEADER}")
    notes.append(f"no PyPI package {' / '.join(PYPI_DISTRIBUTIONS)} in {sys.executable}")
    return None


def how_to_get_it(notes):
    lines = ["nsightkit: NVTX3's C++ header nvtx3/nvtx3.hpp was not found."]
    lines += [f"  - {n}" for n in notes]
    lines += [
        "Any one of these provides it:",
        "  1. NVIDIA's NVTX headers from anywhere: set NSIGHTKIT_NVTX3_INCLUDE_DIR to the directory",
        "     that holds nvtx3/nvtx3.hpp (CMake: also an installed nvtx3 package, nvtx3_DIR);",
        "  2. the CUDA toolkit 12.9 or newer (set CUDAToolkit_ROOT / CUDA_PATH if it is not in",
        "     /usr/local/cuda or on PATH);",
        "  3. pip install nvidia-nvtx (in the Python found first on PATH, or set",
        "     NSIGHTKIT_NVTX3_PYPI_DIR to the directory pip installed it into).",
    ]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", choices=("any", "toolkit", "pypi"), default="any",
                        help="where to look (default: every source, in order)")
    parser.add_argument("--define-variable", action="store_true",
                        help="print pkg-config's --define-variable=nvtx3_includedir=<dir>")
    args = parser.parse_args()

    notes = []
    found = None
    user = os.environ.get("NSIGHTKIT_NVTX3_INCLUDE_DIR")
    if args.source == "any" and user:
        if not has_header(user):
            print(f"nsightkit: NSIGHTKIT_NVTX3_INCLUDE_DIR={user} holds no {HEADER}", file=sys.stderr)
            return 1
        found = user
    if not found and args.source in ("any", "toolkit"):
        found = find_in_toolkit(notes)
    if not found and args.source in ("any", "pypi"):
        found = find_in_pypi(notes)
    if not found:
        print(how_to_get_it(notes), file=sys.stderr)
        return 1
    found = os.path.abspath(found)
    print(f"--define-variable=nvtx3_includedir={found}" if args.define_variable else found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
