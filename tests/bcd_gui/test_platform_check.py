"""The dashboard names every system library Qt's X11 plugin lacks, and their packages."""

from __future__ import annotations

import subprocess
import sys

from bcd_gui.platform_check import debian_package, missing_libraries, xcb_plugin

LDD = """\
\tlinux-vdso.so.1 (0x00007ffd)
\tlibxcb-cursor.so.0 => /lib/x86_64-linux-gnu/libxcb-cursor.so.0 (0x00007f32)
\tlibxcb-icccm.so.4 => not found
\tlibxcb-keysyms.so.1 => not found
\tlibxcb-icccm.so.4 => not found
\tlibxkbcommon-x11.so.0 => not found
"""


def test_every_missing_library_is_named_once_with_its_package() -> None:
    missing = missing_libraries(LDD)
    assert missing == ["libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libxkbcommon-x11.so.0"]
    assert [debian_package(name) for name in missing] == ["libxcb-icccm4", "libxcb-keysyms1", "libxkbcommon-x11-0"]


def test_the_installed_plugin_is_found_and_readable_by_ldd() -> None:
    plugin = xcb_plugin()
    assert plugin is not None
    result = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True, timeout=30)
    assert "libxcb" in result.stdout  # what missing_libraries reads


def test_a_desktop_without_the_libraries_gets_one_line_not_a_qt_abort() -> None:
    """With a library reported missing by the linker, bcd-gui says which and exits 2 before Qt starts."""
    code = (
        "import subprocess, sys\n"
        "import bcd_gui.platform_check as check\n"
        "real = subprocess.run\n"
        "def ldd(cmd, **kw):\n"
        "    out = real(cmd, **kw)\n"
        "    out.stdout += '\\tlibxcb-icccm.so.4 => not found\\n'\n"
        "    return out\n"
        "check.subprocess.run = ldd\n"
        "from bcd_gui.app import main\n"
        "sys.exit(main([]))\n"
    )
    env = {"DISPLAY": ":99", "QT_QPA_PLATFORM": "xcb", "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 2
    assert result.stderr.startswith("bcd-gui: error:") and "libxcb-icccm4" in result.stderr
    assert "Traceback" not in result.stderr
