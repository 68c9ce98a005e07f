"""pytest integration: ``pytest conformance --tritium-backend NAME`` collects one test per case.

Excluded cases become ``xfail(strict=True)`` with the backend's reason (so an unexpected pass
fails the run).  When the backend has no device the cases are compiled, not run: their test ids
end in ``[compile-only]`` and they pass once the binary is built and checked.
"""
from __future__ import annotations

import os

import pytest


def pytest_addoption(parser):
    group = parser.getgroup("tritium conformance")
    group.addoption("--tritium-backend", default="interpreter", help="backend to run the cases on (default: interpreter)")
    group.addoption("--tritium-target", default=None, help="target string, e.g. cuda:90 (compile-only if not the device's)")
    group.addoption("--tritium-compile-only", action="store_true", help="compile only, even with a device")
    group.addoption("--tritium-seed", type=int, default=None, help="input seed (default: fresh per session)")


@pytest.fixture(scope="session")
def conformance_backend(request):
    from conformance.runner import BackendRun
    opt = request.config.getoption
    return BackendRun.open(opt("--tritium-backend"), opt("--tritium-target"), opt("--tritium-compile-only"))


@pytest.fixture(scope="session")
def conformance_seed(request):
    seed = request.config.getoption("--tritium-seed")
    return seed if seed is not None else int.from_bytes(os.urandom(4), "little")


def pytest_report_header(config):
    return f"tritium conformance: backend {config.getoption('--tritium-backend')}"


def pytest_generate_tests(metafunc):
    if "conformance_case_id" not in metafunc.fixturenames:
        return
    from conformance.cases import all_cases
    from conformance.runner import BackendRun
    opt = metafunc.config.getoption
    ctx = BackendRun.open(opt("--tritium-backend"), opt("--tritium-target"), opt("--tritium-compile-only"))
    suffix = "" if ctx.mode == "run" else "[compile-only]"
    params = []
    for case in all_cases():
        reason = ctx.exclusion(case.id)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(case.id, id=case.id + suffix, marks=marks))
    metafunc.parametrize("conformance_case_id", params)
