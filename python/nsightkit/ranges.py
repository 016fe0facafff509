"""NVTX ranges in nsightkit's domain, from Python.

They go through PyPI's `nvtx` package (NVIDIA's own Python binding of NVTX, a dependency of the
wheel) rather than bindings of our own: its domains, registered strings and event attributes are
those of NVTX's C API, and when no NVTX tool is attached its domain is a no-op stand-in. The
domain is "nsightkit", the C++ API's default, so the report names these ranges without a
"domain@" prefix and they nest with the C++ module ranges of an extension (docs/nvtx-tool.md).
`nvtx` is imported on first use: `import nsightkit` needs only the standard library.
"""

DOMAIN = "nsightkit"


def _nvtx():
    try:
        import nvtx
    except ImportError as e:
        raise ImportError("nsightkit: NVTX ranges need PyPI's nvtx package (pip install nvtx)") from e
    return nvtx


def domain():
    """The `nvtx` package's Domain for nsightkit's ranges: a no-op stand-in (no `handle`) when no
    NVTX tool listens, which is decided once per process when NVTX first loads."""
    return _nvtx().get_domain(DOMAIN)


def listening():
    """Whether an NVTX tool (nsightkit profile, Nsight Systems, ...) receives nsightkit's ranges."""
    return getattr(domain(), "handle", None) is not None


def range(name=None, *, color=None, category=None, payload=None):  # noqa: A001 (nsightkit.range)
    """An NVTX push/pop range named `name` in nsightkit's domain: a context manager, and a decorator
    (named after the function when `name` is None). Nested ranges form the report's paths.

        with nsightkit.range("train_step"):
            ...

        @nsightkit.range()
        def load_batch(): ...

    The name is a registered string (registered once); color, category and payload are NVTX's
    event attributes, as `nvtx.annotate` takes them.
    """
    return _nvtx().annotate(name, color=color, domain=DOMAIN, category=category, payload=payload)
