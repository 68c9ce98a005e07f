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
