"""CPU-only: the whole conformance suite compiles to cubin for cuda:90 and cuda:80 (no device
needed), every case built to its final binary and checked by the driver's ``check_binary``; the
error cases must be rejected.  Same as ``tritium conformance --backend nvidia --target cuda:90``."""
import pytest

from conformance import compile_suite


@pytest.mark.parametrize("target", ["cuda:80", "cuda:90"])
def test_conformance_compiles(target, tmp_path):
    results = compile_suite("nvidia", target, tmp_path / "r.json")
    statuses = {r["status"] for r in results}
    assert statuses <= {"compiled", "passed", "excluded"}, statuses
    assert sum(r["status"] == "compiled" for r in results) > 900
