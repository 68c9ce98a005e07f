"""The plugin manager against fake plugins installed as real distributions, each scenario run
in a fresh interpreter so that entry-point discovery is the real one."""
from __future__ import annotations

import pytest

import fakeplugins as fp  # sits beside this file (pytest puts its folder on sys.path)

BROKEN = "raise RuntimeError('vendor import exploded')\n"
NO_API = "from tritium.hooks.hookspecs import hookimpl\n"
BAD_INFO = """
from tritium.hooks.hookspecs import hookimpl
TRITIUM_PLUGIN_API = 1
@hookimpl
def tritium_backend_info():
    raise KeyError('no such device table')
"""
UNKNOWN_HOOK = """
from tritium.hooks.hookspecs import hookimpl
TRITIUM_PLUGIN_API = 1
@hookimpl
def tritium_backend_inf():
    return None
"""
FLAKY_EXTRA = """
@hookimpl
def tritium_parse_options(target, options):
    raise ZeroDivisionError('options table empty')

@hookimpl
def tritium_membar_filter(target):
    raise IndexError('bad rule')
"""
PRESENT_RAISES = """
from tritium.hooks.hookspecs import hookimpl
from tritium.hooks.types import BackendInfo
TRITIUM_PLUGIN_API = 1
@hookimpl
def tritium_backend_info():
    return BackendInfo(name="shaky", api_version=1, version="0", target_kinds=("shaky",),
                       targets=(), default_target="shaky:0", stages=("ttir",), binary_ext="x")
@hookimpl
def tritium_device_present(backend):
    raise OSError('driver library missing')
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    fp.install_good(root, "alpha", present=True)
    fp.install_good(root, "beta", present=True)
    fp.install_good(root, "gamma", present=False)
    fp.install_good(root, "flaky", present=False, extra=FLAKY_EXTRA)
    fp.install_good(root, "oldapi", api=7)
    fp.install(root, "tritium-broken", "tritium_broken_plugin", BROKEN, entry="broken")
    fp.install(root, "tritium-noapi", "tritium_noapi_plugin", NO_API, entry="noapi")
    fp.install(root, "tritium-badinfo", "tritium_badinfo_plugin", BAD_INFO, entry="badinfo")
    fp.install(root, "tritium-typo", "tritium_typo_plugin", UNKNOWN_HOOK, entry="typo")
    fp.install(root, "tritium-shaky", "tritium_shaky_plugin", PRESENT_RAISES, entry="shaky")
    return root


LIST = """
out['backends'] = [b.name for b in manager.list_backends()]
out['failed'] = {f.name: [f.distribution, f.reason] for f in manager.failed_plugins()}
"""


def test_import_does_not_load_plugins(site):
    out = fp.run(site, """
import sys
out['loaded'] = sorted(m for m in sys.modules if m.startswith('tritium_'))
out['heavy'] = sorted(m for m in ('torch', 'xdsl', 'numpy') if m in sys.modules)
""")
    assert out["loaded"] == [] and out["heavy"] == []
    assert out["warnings"] == []


def test_broken_plugins_warn_once_and_others_work(site):
    out = fp.run(site, LIST + "manager.list_backends(); manager.failed_plugins()\n")
    assert {"alpha", "beta", "gamma", "flaky", "shaky"} <= set(out["backends"])
    for name in ("broken", "oldapi", "noapi", "badinfo", "typo"):
        assert name not in out["backends"]
        hits = fp.warnings_about(out, f"plugin {name!r}")
        assert len(hits) == 1, (name, out["warnings"])
        assert hits[0].startswith("TritiumPluginWarning")
        assert f"tritium-{name} 1.0" in hits[0]
    assert "RuntimeError: vendor import exploded" in fp.warnings_about(out, "'broken'")[0]
    assert "declares plugin API 7, this Tritium speaks 1" in fp.warnings_about(out, "'oldapi'")[0]
    assert "does not declare TRITIUM_PLUGIN_API" in fp.warnings_about(out, "'noapi'")[0]
    assert "KeyError" in fp.warnings_about(out, "'badinfo'")[0]
    assert "tritium_backend_inf" in fp.warnings_about(out, "'typo'")[0]
    assert out["failed"]["oldapi"] == ["tritium-oldapi 1.0", "declares plugin API 7, this Tritium speaks 1"]
    # good plugins produce no warnings at all
    for name in ("alpha", "beta", "gamma"):
        assert fp.warnings_about(out, f"'{name}'") == []


def test_selection_rules(site):
    out = fp.run(site, """
import os, tritium_beta_plugin as beta, tritium_alpha_plugin as alpha
sel = manager.select_backend
out['default'] = sel().name
out['explicit'] = sel('gamma').name
out['owner_beta'] = sel(args=(1, beta.Marker())).name
out['owner_alpha'] = sel(args=[alpha.Marker(), beta.Marker()]).name
os.environ['TRITIUM_BACKEND'] = 'beta'
out['env'] = sel().name
out['explicit_over_env'] = sel('alpha', args=(beta.Marker(),)).name
del os.environ['TRITIUM_BACKEND']
try:
    sel('nosuch')
except ValueError as e:
    out['unknown'] = str(e)
""")
    assert out["default"] == "alpha"  # first present backend by name (the interpreter comes last)
    assert out["explicit"] == "gamma"  # explicit works even without a device (compile-only)
    assert out["owner_beta"] == "beta" and out["owner_alpha"] == "alpha"
    assert out["env"] == "beta" and out["explicit_over_env"] == "alpha"
    msg = out["unknown"]
    assert "'nosuch'" in msg and "alpha" in msg and "beta" in msg
    assert "broken (import failed: RuntimeError: vendor import exploded)" in msg


def test_owner_needs_device_present(site):
    out = fp.run(site, """
import tritium_gamma_plugin as gamma
out['sel'] = manager.select_backend(args=(gamma.Marker(),)).name
""")
    assert out["sel"] == "alpha"  # gamma owns the marker but has no device


def test_facade_and_targets(site):
    out = fp.run(site, """
from tritium.hooks.types import GPUTarget
a = manager.get_backend('alpha')
g = manager.get_backend('gamma')
out['info'] = [a.info.version, a.plugin, a.distribution]
out['present'] = [a.device_present(), g.device_present()]
out['current'] = [str(a.current_target()), g.current_target()]
out['default'] = [str(a.default_target()), str(g.default_target())]
out['parsed'] = str(manager.parse_target('beta:1'))
for text in ('nokind:3', 'alpha:5'):
    try:
        manager.parse_target(text)
    except ValueError as e:
        out[text] = str(e)
try:
    a.parse_target('beta:1')
except ValueError as e:
    out['foreign'] = str(e)
t = a.parse_target('alpha:1')
opts = a.parse_options(t, {'num_warps': 8, 'unknown_key': 1})
out['opts'] = [opts.num_warps, opts.threads_per_warp]
stages = a.make_stages(t, opts, lambda src, md: src)
out['stages'] = list(stages)
out['bin'] = stages['bin']('x', {})
out['membar'] = a.membar_filter(t)(None, None)
out['excl'] = a.conformance_exclusions(t)
out['driver_same'] = a.driver() is a.driver()
out['enc'] = manager.layout_encodings()
try:
    a.make_stages(GPUTarget('beta', 1, 16), opts, None)
except ValueError as e:
    out['nostages'] = str(e)
""")
    assert out["info"] == ["9.9", "alpha", "tritium-alpha 1.0"]
    assert out["present"] == [True, False]
    assert out["current"] == ["alpha:1", None]
    assert out["default"] == ["alpha:1", "gamma:2"]
    assert out["parsed"] == "beta:1"
    assert "unknown target kind 'nokind'" in out["nokind:3"] and "alpha, beta" in out["nokind:3"]
    assert out["alpha:5"] == "alpha architectures are 1 and 2, got '5'"
    assert "does not compile for target 'beta:1'" in out["foreign"]
    assert out["opts"] == [8, 16]  # core Options fallback, warp size from the target
    assert out["stages"] == ["ttir", "bin"] and out["bin"] == "b'BIN:x'"
    assert out["membar"] is False and out["excl"] == [] and out["driver_same"] is True
    assert {"alpha_enc", "beta_enc", "gamma_enc"} <= set(out["enc"])
    assert "no compilation stages for target beta:1" in out["nostages"]


def test_hook_errors_name_the_plugin(site):
    out = fp.run(site, """
from tritium.hooks.manager import PluginError
f = manager.get_backend('flaky')
t = f.parse_target('flaky:1')
for key, call in (('opts', lambda: f.parse_options(t, {})), ('membar', lambda: f.membar_filter(t))):
    try:
        call()
    except PluginError as e:
        out[key] = [str(e), e.plugin, type(e.__cause__).__name__]
s = manager.get_backend('shaky')
out['shaky'] = [s.device_present(), s.device_present()]
out['sel'] = manager.select_backend().name
""")
    assert out["opts"] == ["backend plugin 'flaky' failed in tritium_parse_options: "
                           "ZeroDivisionError: options table empty", "flaky", "ZeroDivisionError"]
    assert out["membar"][1] == "flaky" and "IndexError: bad rule" in out["membar"][0]
    assert out["shaky"] == [False, False]
    hits = fp.warnings_about(out, "'shaky'")
    assert len(hits) == 1 and "OSError: driver library missing" in hits[0]
