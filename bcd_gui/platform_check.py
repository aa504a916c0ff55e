"""Before Qt opens a window on X11: the system libraries its xcb plugin needs, named by bcd.

Without them Qt aborts the process with a message that names one library (the first it looked
for), often not the one missing. Asking the dynamic linker about the plugin itself lists every
library it cannot find, so the user installs them all at once.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found", re.MULTILINE)
_SONAME = re.compile(r"^(lib[\w+-]+?)\.so\.(\d+)")


def xcb_plugin() -> Path | None:
    import PySide6

    plugin = Path(PySide6.__file__).parent / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    return plugin if plugin.is_file() else None


def uses_xcb() -> bool:
    """Whether Qt will open its window through X11 (Linux, no other platform asked for)."""
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    return sys.platform.startswith("linux") and platform in ("", "xcb") and bool(os.environ.get("DISPLAY"))


def missing_libraries(ldd_output: str) -> list[str]:
    """The libraries `ldd` reported as not found, each once, in its order."""
    return list(dict.fromkeys(_NOT_FOUND.findall(ldd_output)))


def debian_package(soname: str) -> str:
    """`libxcb-icccm.so.4` -> `libxcb-icccm4`, `libxkbcommon-x11.so.0` -> `libxkbcommon-x11-0`:
    how Debian and Ubuntu name the package of a library."""
    match = _SONAME.match(soname)
    if not match:
        return soname
    name, version = match.groups()
    return f"{name}-{version}" if name[-1].isdigit() else f"{name}{version}"


def xcb_problem() -> str | None:
    """What stops Qt from opening a window here, in bcd's words; None when nothing does (or
    Qt will not use X11, or `ldd` cannot tell)."""
    plugin = xcb_plugin() if uses_xcb() else None
    if plugin is None:
        return None
    try:
        result = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    missing = missing_libraries(result.stdout)
    if not missing:
        return None
    packages = " ".join(dict.fromkeys(debian_package(name) for name in missing))
    return (
        f"the dashboard cannot open a window on this desktop: Qt's X11 support needs {', '.join(missing)}, "
        f"which this system lacks. Install them (Debian/Ubuntu: sudo apt-get install {packages}), or use "
        "`bcd` in a terminal, which needs no window"
    )
