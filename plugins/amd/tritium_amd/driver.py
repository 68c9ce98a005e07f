from tritium.runtime.driver import Driver
class HipDriver(Driver):
    backend = "amd"
    def is_active(self): return False
    def get_current_target(self): return None
    def get_device_properties(self, d): return {}
    def load_binary(self, *a): raise RuntimeError
    def make_launcher(self, *a): raise RuntimeError
