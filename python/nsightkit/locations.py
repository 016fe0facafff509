"""Where an installed nsightkit keeps its headers, CMake package, pkg-config files and command.

For C++ extensions built against nsightkit, as pybind11 offers them:

    cmake -Dnsightkit_DIR="$(python -c 'import nsightkit; print(nsightkit.get_cmake_dir())')" ...
    torch.utils.cpp_extension.load(..., extra_include_paths=[nsightkit.get_include()])

The directories are read from _layout.py, which CMake writes into every install of the package
(cmake/nsightkitPython.cmake): in the wheel they sit inside the package, in a C++ install under
its prefix. A source checkout has no _layout.py: these functions then raise FileNotFoundError.
"""

import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def _installed(attribute, what):
    try:
        from . import _layout
    except ImportError:
        raise FileNotFoundError(
            f"nsightkit: no {what} beside this package ({_HERE}): it is a source checkout, not an "
            "install; `pip install` nsightkit (docs/pytorch.md)") from None
    relative = getattr(_layout, attribute, "")
    path = os.path.normpath(os.path.join(_HERE, relative)) if relative else ""
    if not path or not os.path.exists(path):
        raise FileNotFoundError(f"nsightkit: this install has no {what} ({path or 'none installed'})")
    return path


def get_include():
    """The directory that holds nsightkit/nsightkit.hpp (NVTX3's headers come from nvidia-nvtx, and
    {fmt}'s from the system: docs/pytorch.md, "C++ extensions")."""
    return _installed("INCLUDE_DIR", "headers")


def get_cmake_dir():
    """The directory of nsightkit-config.cmake, for find_package(nsightkit) (nsightkit_DIR)."""
    return _installed("CMAKE_DIR", "CMake package")


def get_pkgconfig_dir():
    """The directory of nsightkit.pc, for PKG_CONFIG_PATH."""
    return _installed("PKGCONFIG_DIR", "pkg-config files")


def get_command():
    """The path of the nsightkit program (the `nsightkit` console script runs it)."""
    return _installed("COMMAND", "nsightkit command")


def get_tool_dir():
    """The directory of the NVTX tool libraries (libnsightkit-nvtx*.so): `nsightkit profile` injects
    them, and capture windows and nsightkit.profile() load them (nsightkit.tool)."""
    return _installed("TOOL_DIR", "NVTX tool libraries")
