#!/usr/bin/env python3
"""Checks what NSIGHTKIT_DISABLE leaves in a build.

  check_disabled_object.py OBJ...          objects compiled with NSIGHTKIT_DISABLE: no NVTX/dlopen
                                           symbols, and nsk_instrumented compiles to exactly the
                                           machine code of nsk_plain
  check_disabled_object.py --program EXE   a program whose target defines NSIGHTKIT_DISABLE and
                                           links nsightkit::nsightkit: no NVTX/dlopen symbol and
                                           nothing of the enabled build (libnsightkit's engine)
"""
import re
import subprocess
import sys


def disassembly(obj: str, symbol: str) -> list:
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "--disassemble=" + symbol, obj],
                         check=True, capture_output=True, text=True).stdout
    body, inside = [], False
    for line in out.splitlines():
        if re.match(r"^[0-9a-f]+ <%s>:" % re.escape(symbol), line):
            inside = True
            continue
        if inside:
            if not line.strip():
                break
            # drop the address column, keep the instruction (relative jumps are symbol-relative)
            parts = line.split("\t", 1)
            instr = parts[1] if len(parts) > 1 else parts[0]
            body.append(re.sub(r"[0-9a-f]+ <%s\+" % re.escape(symbol), "<+", instr).strip())
    return body


# NVTX's and the dynamic loader's names: a disabled build calls none of them.
NVTX_OR_DL = r"nvtx|dlopen|dlsym"
# The enabled build's ABI namespace (config.hpp): libnsightkit's engine lives there.
ENABLED_NAMESPACE = "nsightkit::v0::"


# A sanitizer's runtime, linked into a sanitized program, intercepts dlopen and looks symbols up
# with dlsym itself: those are its own, not the program's (the unsanitized suites see none).
SANITIZER_RUNTIME = r"__(asan|tsan|msan|lsan|ubsan|sanitizer|interception|interceptor)|\bdl(open|sym)(@.*)?$"


def check_program(exe: str) -> int:
    syms = subprocess.run(["nm", "-C", exe], check=True, capture_output=True, text=True).stdout
    lines = syms.splitlines()
    if any(re.search(r"\b__(asan|tsan|msan)_init\b", s) for s in lines):
        lines = [s for s in lines if not re.search(SANITIZER_RUNTIME, s)]
    bad = [s for s in lines
           if re.search(NVTX_OR_DL, s, re.I) or ENABLED_NAMESPACE in s]
    if bad:
        print(f"{exe}: a disabled program links NVTX, dlopen or the enabled engine:\n  "
              + "\n  ".join(bad[:40]))
        return 1
    disabled = [s for s in syms.splitlines() if "nsightkit::v0_disabled::" in s]
    if not disabled:
        print(f"{exe}: no nsightkit symbol at all: not the program this check is for")
        return 1
    print(f"{exe}: no NVTX, dlopen or enabled-engine symbols ({len(disabled)} disabled-mode ones)")
    return 0


def main() -> int:
    if sys.argv[1:2] == ["--program"]:
        return check_program(sys.argv[2])
    objs = sys.argv[1:]
    failed = False
    for obj in objs:
        syms = subprocess.run(["nm", obj], check=True, capture_output=True, text=True).stdout
        bad = [s for s in syms.splitlines() if re.search(NVTX_OR_DL, s, re.I)]
        if bad:
            print(f"{obj}: NVTX/dl symbols in a disabled build:\n  " + "\n  ".join(bad))
            failed = True
        plain = disassembly(obj, "nsk_plain")
        inst = disassembly(obj, "nsk_instrumented")
        if not plain:
            print(f"{obj}: could not disassemble nsk_plain")
            failed = True
        elif plain != inst:
            print(f"{obj}: instrumented code differs from plain code\nplain:\n  " + "\n  ".join(plain)
                  + "\ninstrumented:\n  " + "\n  ".join(inst))
            failed = True
        else:
            print(f"{obj}: no NVTX symbols; nsk_instrumented == nsk_plain ({len(plain)} instructions)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
