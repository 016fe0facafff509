"""A Python program annotated with the `nvtx` package from PyPI, for `nsightkit profile`."""
import time

import nvtx


@nvtx.annotate("load", color="blue")
def load():
    time.sleep(0.001)


for _ in range(5):
    with nvtx.annotate("epoch", domain="trainer"):
        load()
        with nvtx.annotate("compute"):
            time.sleep(0.002)
    nvtx.mark("epoch done")
rng = nvtx.start_range("shutdown")
nvtx.end_range(rng)
