#!/usr/bin/env python3
"""vcpkg's post-build checks, for a Linux release-only static package, without vcpkg.

    post_build_checks.py --package <packages/<port>_<triplet>> --port <ports/<port>> \\
        --forbid <packages root> --forbid <installed root> --forbid <buildtrees> --forbid <downloads>

Re-implements, for what vcpkg checks on a non-Windows triplet with VCPKG_BUILD_TYPE release, the
checks of vcpkg-tool's post-build lint (src/vcpkg/postbuildlint.cpp): files in include/; no
restricted (standard library) headers at include/'s top; no debug/include or debug/share; no
bin/ or debug/bin/ in a static build (programs belong in tools/<port>);
no CMake files in cmake/, lib/cmake, debug/cmake or debug/lib/cmake; share/<port>/copyright;
share/<port>/usage when the port has a usage file; no empty directories; no regular files at the
package's top or in debug/; .pc files only in lib/pkgconfig, or in share/pkgconfig when they
have no Libs/Libs.private; no absolute path of vcpkg's packages, installed, buildtrees or
downloads directories (ignoring comments as vcpkg does). Each failed check prints a warning the
way vcpkg does; the exit status is the number of failed checks (vcpkg: "found N post-build
check problem(s)"). Standard library only.
"""
import argparse
import os
import re
import sys

# Headers vcpkg refuses at include/'s top (a subset of its list: the C and C++ standard headers).
RESTRICTED_HEADERS = {
    "assert.h", "complex.h", "ctype.h", "errno.h", "fenv.h", "float.h", "inttypes.h", "iso646.h",
    "limits.h", "locale.h", "math.h", "setjmp.h", "signal.h", "stdalign.h", "stdarg.h",
    "stdatomic.h", "stdbool.h", "stddef.h", "stdint.h", "stdio.h", "stdlib.h", "stdnoreturn.h",
    "string.h", "tgmath.h", "threads.h", "time.h", "uchar.h", "wchar.h", "wctype.h", "algorithm",
    "array", "atomic", "bitset", "chrono", "cmath", "cstddef", "cstdint", "cstdio", "cstdlib",
    "cstring", "exception", "functional", "iostream", "limits", "list", "map", "memory", "mutex",
    "new", "optional", "set", "string", "string_view", "thread", "tuple", "type_traits",
    "utility", "variant", "vector", "dlfcn.h", "pthread.h", "unistd.h", "getopt.h",
}


def regular_files(root):
    out = []
    for base, _, files in os.walk(root):
        for f in files:
            out.append(os.path.relpath(os.path.join(base, f), root))
    return sorted(out)


def strip_c_comments(text):
    return re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)


def strip_hash_comments(text):
    return "\n".join(line for line in text.split("\n") if not line.lstrip().startswith("#"))


def contents_to_scan(path):
    """The text vcpkg searches for absolute paths in this file, or None (not scanned)."""
    name = os.path.basename(path)
    ext = os.path.splitext(name)[1]
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    text = data.decode("utf-8", errors="replace")
    if ext in (".h", ".hpp", ".hxx"):
        return strip_c_comments(text)
    if ext in (".cfg", ".ini") or name == "usage":
        return text
    if ext in (".py", ".sh", ".cmake", ".pc", ".conf", ".csh", ".pl"):
        return strip_hash_comments(text)
    if ext == "" and data.startswith(b"#!"):
        return strip_hash_comments(text)
    return None


def pc_has_libs(path):
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("Libs"):
                colon = line.find(":")
                if colon != -1 and line[colon + 1:].strip():
                    return True
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--package", required=True, help="the package directory (packages/<port>_<triplet>)")
    ap.add_argument("--port", required=True, help="the port directory (holds portfile.cmake, usage)")
    ap.add_argument("--forbid", action="append", default=[], help="an absolute path no file may hold")
    args = ap.parse_args()
    pkg = os.path.abspath(args.package)
    port_name = os.path.basename(os.path.normpath(args.port))
    portfile = os.path.join(args.port, "portfile.cmake")
    files = regular_files(pkg)
    problems = []

    def warn(message, paths=()):
        text = f"{portfile}: warning: {message}"
        for p in paths:
            text += f"\n  {p}"
        problems.append(text)

    if not any(f.startswith("include" + os.sep) for f in files):
        warn("The folder include/ is empty or not present (a header-only port must install headers)")
    top_headers = [f for f in files if os.path.dirname(f) == "include" and os.path.basename(f) in RESTRICTED_HEADERS]
    if top_headers:
        warn("Restricted headers (standard library names) are present at include/'s top", top_headers)
    for d in ("debug/include", "debug/share"):
        if os.path.isdir(os.path.join(pkg, d)):
            warn(f"{d} should not exist", [d])
    # Linux triplets link statically (VCPKG_LIBRARY_LINKAGE static).
    for d in ("bin", "debug/bin"):
        if os.path.isdir(os.path.join(pkg, d)):
            warn(f"There should be no {d}/ directory in a static build, but it is present", [d])
    cmake_dirs = ("cmake/", "debug/cmake/", "lib/cmake/", "debug/lib/cmake/")
    misplaced_cmake = [f for f in files if f.endswith(".cmake") and f.replace(os.sep, "/").startswith(cmake_dirs)]
    if misplaced_cmake:
        warn("CMake files belong in share/<port> (vcpkg_cmake_config_fixup)", misplaced_cmake)
    if not os.path.isfile(os.path.join(pkg, "share", port_name, "copyright")):
        warn(f"The license is not installed to share/{port_name}/copyright (vcpkg_install_copyright)")
    if os.path.isfile(os.path.join(args.port, "usage")) and not os.path.isfile(os.path.join(pkg, "share", port_name, "usage")):
        warn(f"The port has a usage file but did not install it to share/{port_name}/usage")
    empty = []
    for base, dirs, names in os.walk(pkg):
        for d in dirs:
            full = os.path.join(base, d)
            if not os.listdir(full):
                empty.append(os.path.relpath(full, pkg))
    if empty:
        warn("There should be no empty directories in the package", empty)
    loose = [f for f in files if os.path.dirname(f) in ("", "debug")]
    if loose:
        warn("Files at the package's top or in debug/ (they belong in a subdirectory)", loose)
    misplaced_pc = []
    for f in files:
        if not f.endswith(".pc"):
            continue
        parent = os.path.dirname(f).replace(os.sep, "/")
        if parent in ("lib/pkgconfig", "debug/lib/pkgconfig"):
            continue
        if not pc_has_libs(os.path.join(pkg, f)) and parent == "share/pkgconfig":
            continue
        misplaced_pc.append(f)
    if misplaced_pc:
        warn("Misplaced pkgconfig files: a .pc with Libs/Libs.private belongs in lib/pkgconfig, one "
             "without in share/pkgconfig", misplaced_pc)
    forbidden = sorted({os.path.abspath(p) for p in args.forbid if p})
    with_paths = []
    for f in files:
        text = contents_to_scan(os.path.join(pkg, f))
        if text is not None and any(p in text for p in forbidden):
            with_paths.append(f)
    if with_paths:
        warn("There are absolute paths of vcpkg's directories in the installed package (" +
             ", ".join(forbidden) + ")", with_paths)

    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"{portfile}: warning: Found {len(problems)} post-build check problem(s).", file=sys.stderr)
    else:
        print(f"post-build checks: 0 problems in {pkg} ({len(files)} files)")
    return len(problems)


if __name__ == "__main__":
    sys.exit(main())
