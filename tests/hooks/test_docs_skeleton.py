"""The minimal plugin printed in docs/hooks.md registers and answers as the page says."""
from __future__ import annotations

import re
import types
from pathlib import Path

import pytest

from tritium.hooks.manager import TritiumPluginManager

DOC = Path(__file__).resolve().parents[2] / "docs" / "hooks.md"


def test_skeleton_plugin_registers():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    skeleton = types.ModuleType("tritium_myvendor_plugin")
    exec(compile(blocks[-1], "hooks.md", "exec"), skeleton.__dict__)
    pm = TritiumPluginManager(entry_point_group=None)
    assert pm.register(skeleton, "myvendor"), pm.failed_plugins()
    b = pm.get_backend("myvendor")
    target = pm.parse_target("mv:1")
    assert str(target) == "mv:1" and b.info.stages == ("ttir", "ttgir", "bin")
    assert b.parse_options(target, {"num_warps": 2}).threads_per_warp == 32
    with pytest.raises(ValueError, match="mv architectures: 1; got '7'"):
        pm.parse_target("mv:7")
