"""Running NVIDIA kernels: the cuda-python driver (:mod:`.driver`, cuda-python imported on first
use), the generated launchers (:mod:`.launcher`) and their C fast path (:mod:`.c_launch`), the
current stream and device (:mod:`.queries`), the device pointers of what users pass
(:mod:`.device_pointers`) and the host tensor maps of TMA descriptors (:mod:`.tensor_map`)."""
