"""``BackendPlugin``: a plugin object that declares its targets once answers every hook for its own
backend and target kinds only, and is registered like a module of plain hookimpls."""
from __future__ import annotations

import pytest

from tritium.hooks import BackendInfo, BackendPlugin, GPUTarget, Options
from tritium.hooks.manager import TritiumPluginManager, TritiumPluginWarning


class _Driver:
    def __init__(self):
        self.made = 1

    def is_active(self):
        return False


class ToyPlugin(BackendPlugin):
    TRITIUM_PLUGIN_API = 1
    info = BackendInfo(name="toy", api_version=1, version="0", target_kinds=("toy",), targets=("toy:1",),
                       default_target="toy:1", stages=("ttir", "toybin"), binary_ext="toybin")

    def parse_target(self, text):
        arch = text.partition(":")[2]
        if arch != "1":
            raise ValueError(f"unknown toy architecture {arch!r}; accepted: toy:1")
        return GPUTarget("toy", 1, 8)

    def parse_options(self, target, options):
        return Options.from_dict(options, threads_per_warp=target.warp_size)

    def add_stages(self, target, stages, options):
        stages["toybin"] = lambda src, metadata: b"toy"

    def make_driver(self):
        return _Driver()


def test_hooks_answer_only_for_own_backend_and_targets():
    p = ToyPlugin()
    toy, other = GPUTarget("toy", 1, 8), GPUTarget("cuda", 90, 32)
    assert p.tritium_backend_info() is ToyPlugin.info
    assert p.tritium_parse_target("toy:1") == toy and p.tritium_parse_target("cuda:90") is None
    with pytest.raises(ValueError, match="accepted: toy:1"):
        p.tritium_parse_target("toy:7")
    assert p.tritium_parse_options(toy, {"num_warps": 2}).threads_per_warp == 8
    assert p.tritium_parse_options(other, {}) is None
    stages = {}
    assert p.tritium_add_stages(toy, stages, None) is True and list(stages) == ["toybin"]
    assert p.tritium_add_stages(other, {}, None) is None
    assert p.tritium_device_present("toy") is False and p.tritium_device_present("nvidia") is None
    assert p.tritium_driver("nvidia") is None
    assert p.tritium_driver("toy") is p.tritium_driver("toy")  # made once
    assert p.tritium_membar_filter(toy) is None and p.tritium_conformance_exclusions("toy", toy) == []
    assert p.tritium_layout_encodings() == []


def test_registered_through_the_manager_like_a_module():
    pm = TritiumPluginManager(entry_point_group=None)
    assert pm.register(ToyPlugin(), "toy-plugin")
    backend = pm.get_backend("toy")
    assert backend.plugin == "toy-plugin"
    assert pm.parse_target("toy:1") == GPUTarget("toy", 1, 8)


def test_plugin_without_declared_api_is_refused():
    class Undeclared(ToyPlugin):
        pass
    del ToyPlugin.TRITIUM_PLUGIN_API
    try:
        pm = TritiumPluginManager(entry_point_group=None)
        with pytest.warns(TritiumPluginWarning, match="does not declare TRITIUM_PLUGIN_API"):
            assert not pm.register(Undeclared(), "undeclared")
    finally:
        ToyPlugin.TRITIUM_PLUGIN_API = 1


def test_shipped_plugins_use_it():
    pytest.importorskip("tritium_nvidia", reason="the NVIDIA plugin is not installed")
    pytest.importorskip("tritium_amd", reason="the AMD plugin is not installed")
    from tritium_amd.plugin import AmdPlugin, amd_plugin
    from tritium_nvidia.plugin import NvidiaPlugin, nvidia_plugin
    assert isinstance(nvidia_plugin, NvidiaPlugin) and isinstance(amd_plugin, AmdPlugin)
    assert nvidia_plugin.tritium_parse_target("hip:gfx942") is None
    assert amd_plugin.tritium_parse_target("hip:gfx942") == GPUTarget("hip", "gfx942", 64)
