"""Running AMD kernels: the hip-python driver (:mod:`.driver`, hip-python imported on first use)
and the device pointers of what users pass (:mod:`.device_pointers`)."""
