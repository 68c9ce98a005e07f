"""``tritium conformance --devices``: which devices the cases are spread over."""
import pytest

from conformance.cli import parse_devices


class _Driver:
    def device_count(self):
        return 3


class _Backend:
    def __init__(self, present=True):
        self.present = present

    def device_present(self):
        return self.present

    def driver(self):
        return _Driver()


def test_parse_devices():
    assert parse_devices(None, _Backend()) == [0]
    assert parse_devices("all", _Backend()) == [0, 1, 2]
    assert parse_devices("all", _Backend(present=False)) == [0]
    assert parse_devices("1,0", _Backend()) == [1, 0]
    with pytest.raises(ValueError, match="--devices"):
        parse_devices("gpu1", _Backend())


def test_default_driver_select_device_names_the_arguments():
    from tritium.runtime.driver import LaunchDeviceError, one_device
    assert one_device({}) is None and one_device({"a": 1, "b": 1}) == 1
    with pytest.raises(LaunchDeviceError, match="a on device 0, b on device 1"):
        one_device({"a": 0, "b": 1})


def test_chunks_share_a_large_kernel_between_workers():
    from conformance.cases import select
    from conformance.cli import _CHUNK, _chunks
    cases = select((), ("dot3d", "grids"))
    chunks = _chunks(cases)
    assert sorted(c for ch in chunks for c in ch) == sorted(c.id for c in cases)  # each case once
    assert all(len(ch) <= _CHUNK for ch in chunks)
    kernel = {c.id: id(c.kernel) for c in cases}
    assert all(len({kernel[i] for i in ch}) == 1 for ch in chunks)  # one kernel per chunk
    # the 75 batched-dot cases of one kernel are spread over several chunks, and come first
    assert sum(ch[0].startswith("dot3d/") for ch in chunks) > 2 and chunks[0][0].startswith("dot3d/")


def test_skip_leaves_cases_out(capsys):
    from conformance.cli import main
    assert main(["--backend", "interpreter", "--category", "grids", "--skip", "grids/*", "--list"]) == 0
    out = capsys.readouterr()
    assert out.out.strip() == "" and "left out" in out.err
    assert main(["--backend", "interpreter", "--category", "grids", "--list"]) == 0
    assert capsys.readouterr().out.strip()
