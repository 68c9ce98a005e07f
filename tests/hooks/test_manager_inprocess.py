"""Registration rules checked in-process on a manager that reads no entry points."""
from __future__ import annotations

import types

import pytest

from tritium.hooks.hookspecs import hookimpl
from tritium.hooks.manager import TritiumPluginManager, TritiumPluginWarning
from tritium.hooks.types import BackendInfo


def _info(name, api=1):
    return BackendInfo(name=name, api_version=api, version="1", target_kinds=(name,), targets=(),
                       default_target=f"{name}:0", stages=("ttir",), binary_ext="x")


def _plugin(infos, api=1):
    mod = types.ModuleType("fake_plugin")
    mod.TRITIUM_PLUGIN_API = api

    @hookimpl
    def tritium_backend_info():
        return infos

    mod.tritium_backend_info = tritium_backend_info
    return mod


def test_one_plugin_may_provide_several_backends():
    pm = TritiumPluginManager(entry_point_group=None)
    assert pm.register(_plugin([_info("one"), _info("two")]), "multi")
    assert [b.name for b in pm.list_backends()] == ["one", "two"]
    assert {b.plugin for b in pm.list_backends()} == {"multi"}
    assert pm.failed_plugins() == []


def test_duplicate_backend_name_is_rejected_with_warning():
    pm = TritiumPluginManager(entry_point_group=None)
    assert pm.register(_plugin(_info("one")), "first")
    with pytest.warns(TritiumPluginWarning, match="'second'.*already provided by plugin 'first'"):
        assert not pm.register(_plugin(_info("one")), "second")
    assert pm.get_backend("one").plugin == "first"
    assert [f.name for f in pm.failed_plugins()] == ["second"]


def test_backend_info_api_mismatch_and_wrong_type():
    pm = TritiumPluginManager(entry_point_group=None)
    with pytest.warns(TritiumPluginWarning, match="declares plugin API 2, this Tritium speaks 1"):
        assert not pm.register(_plugin(_info("x", api=2)), "p1")
    with pytest.warns(TritiumPluginWarning, match="must return BackendInfo, got dict"):
        assert not pm.register(_plugin({"name": "x"}), "p2")
    assert pm.list_backends() == []
    assert not pm.pm.has_plugin("p1") and not pm.pm.has_plugin("p2")


def test_hook_of_one_plugin_never_answers_for_another():
    pm = TritiumPluginManager(entry_point_group=None)
    greedy = _plugin(_info("greedy"))

    @hookimpl
    def tritium_device_present(backend):
        return True  # wrongly answers for every backend

    greedy.tritium_device_present = tritium_device_present
    pm.register(greedy, "greedy")
    pm.register(_plugin(_info("quiet")), "quiet")  # implements no device hook at all
    assert pm.get_backend("greedy").device_present() is True
    assert pm.get_backend("quiet").device_present() is False


def test_no_backend_at_all_explains(monkeypatch):
    monkeypatch.delenv("TRITIUM_BACKEND", raising=False)
    pm = TritiumPluginManager(entry_point_group=None)
    with pytest.raises(RuntimeError, match="'interpreter' backend is not installed; installed backends: none"):
        pm.select_backend()


def _plugin_with_driver(driver, present=False):
    mod = _plugin(_info("dev"))

    @hookimpl
    def tritium_device_present(backend):
        return present if backend == "dev" else None

    @hookimpl
    def tritium_driver(backend):
        if isinstance(driver, Exception):
            raise driver
        return driver if backend == "dev" else None

    mod.tritium_device_present, mod.tritium_driver = tritium_device_present, tritium_driver
    return mod


def test_device_unavailable_reason_comes_from_the_driver():
    from tritium.runtime.driver import Driver

    class Absent(Driver):
        backend = "dev"
        is_active = get_current_target = get_device_properties = load_binary = make_launcher = \
            lambda self, *a: None

        def inactive_reason(self):
            return "the runtime library is missing: install it"

    pm = TritiumPluginManager(entry_point_group=None)
    assert pm.register(_plugin_with_driver(Absent()), "dev")
    assert pm.get_backend("dev").device_unavailable_reason() == "the runtime library is missing: install it"
    pm = TritiumPluginManager(entry_point_group=None)
    assert pm.register(_plugin_with_driver(Absent(), present=True), "dev")
    assert pm.get_backend("dev").device_unavailable_reason() is None
    # a driver that cannot be created only loses the explanation
    pm = TritiumPluginManager(entry_point_group=None)
    assert pm.register(_plugin_with_driver(RuntimeError("broken")), "dev")
    assert pm.get_backend("dev").device_unavailable_reason() is None
