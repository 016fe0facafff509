#!/usr/bin/env python3
"""Checks what nsightkit's code generation left in object files (tests/compiled/compiled.cmake).

  check_compiled_objects.py NM --compiled OBJ...   each object defines none of the report engine's
                                                   functions, none of {fmt}'s formatting engine and
                                                   none of NVTX's code; together they call the
                                                   compiled entry points and reference
                                                   libnsightkit's start-up
  check_compiled_objects.py NM --compiled-recorder OBJ...
                                                   the same for a program that installs the NVTX
                                                   Recorder (testing.hpp includes NVTX, so NVTX's
                                                   code is allowed) and formats no module name:
                                                   tests/consumers/run_consumers.sh
  check_compiled_objects.py NM --header-only OBJ   the object does define the report engine and
                                                   NVTX's code (the header-only mode; proves the
                                                   check can fail)
"""
import subprocess
import sys

# A function of the report engine (detail::report, the entry points aside), or {fmt}'s engine.
ENGINE = ("::detail::report::",)
FMT_ENGINE = ("fmt::v", "::detail::vformat_to")
# NVTX's header-only implementation: its initialisation stubs and globals, which every translation
# unit that includes an NVTX header defines.
NVTX_CODE = ("nvtxGlobals", "_impl_init_v3")
# The compiled part's entry points a program of ranges, formatted names and a report calls.
ENTRY_POINTS = ("::detail::report::entry::", "::detail::emit_out(", "::detail::emit_formatted_out(",
                "::detail::end_out(", "::detail::module::format_module_name(",
                "nsightkit_detail_startup")
# Per compiled mode: the parts no object may define, and the entry points the objects must call.
COMPILED_MODES = {
    "--compiled": (("report engine", "fmt engine", "NVTX"),
                   ("nsightkit_detail_startup", "detail::emit_formatted_out(",
                    "detail::module::format_module_name(")),
    "--compiled-recorder": (("report engine", "fmt engine"),
                            ("nsightkit_detail_startup", "detail::emit_formatted_out(")),
}


def symbols(nm, obj):
    out = subprocess.run([nm, "-C", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = [], []
    for line in out.splitlines():
        stripped = line.strip()
        if stripped.startswith("U "):  # no address; the demangled name may hold spaces
            undefined.append(stripped[2:])
            continue
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[1] in "TtWwVvuDdBbRr":
            defined.append(parts[2])
    return defined, undefined


def engine_functions(defined):
    """What `defined` holds of each part the compiled mode keeps out of a program's objects."""
    return {
        "report engine": [s for s in defined if ENGINE[0] in s and "::detail::report::entry::" not in s],
        "fmt engine": [s for s in defined if s.startswith(FMT_ENGINE[0]) and FMT_ENGINE[1] in s],
        "NVTX": [s for s in defined if any(n in s for n in NVTX_CODE)],
    }


def main():
    if len(sys.argv) < 4 or sys.argv[2] not in ("--header-only", *COMPILED_MODES):
        sys.exit(__doc__)
    nm, mode, objects = sys.argv[1], sys.argv[2], sys.argv[3:]
    compiled = mode in COMPILED_MODES
    forbidden, needed_calls = COMPILED_MODES.get(mode, ((), ()))
    ok = True
    calls = set()
    for obj in objects:
        defined, undefined = symbols(nm, obj)
        parts = engine_functions(defined)
        calls.update(s for s in undefined if any(e in s for e in ENTRY_POINTS))
        for part, found in parts.items():
            if part in forbidden and found:
                ok = False
                print(f"FAIL: {obj} defines {len(found)} symbols of the {part}, e.g.:")
                for s in found[:10]:
                    print(f"  {s}")
            if mode == "--header-only" and part != "fmt engine":
                if found:
                    print(f"{obj}: {len(found)} symbols of the {part}, as expected header-only")
                else:
                    ok = False
                    print(f"FAIL: {obj} defines nothing of the {part} (is it header-only?)")
    if compiled:
        for needed in needed_calls:
            if not any(needed in s for s in calls):
                ok = False
                print(f"FAIL: no object calls the compiled {needed}")
        print("calls into the compiled part:", *sorted(calls), sep="\n  ")
    print("ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
