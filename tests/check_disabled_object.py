#!/usr/bin/env python3
"""Checks an object compiled with NSIGHTKIT_DISABLE: no NVTX/dlopen symbols, and nsk_instrumented
compiles to exactly the machine code of nsk_plain."""
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


def main() -> int:
    objs = sys.argv[1:]
    failed = False
    for obj in objs:
        syms = subprocess.run(["nm", obj], check=True, capture_output=True, text=True).stdout
        bad = [s for s in syms.splitlines() if re.search(r"nvtx|dlopen|dlsym", s, re.I)]
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
