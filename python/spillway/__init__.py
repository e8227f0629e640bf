"""spillway — Gemma inference that plans, before anything is allocated,
where every byte lives (accelerator, pinned host, host, the model file),
then runs the plan: the Python face of libspillway (include/spillway.h),
built into this package.

    import spillway
    with spillway.Model("gemma-3-270m-q4_k_m.gguf", n_ctx=2048) as m:
        print(m.plan()["tiers"])
        for piece in m.generate("The capital of France is", max_tokens=16, temperature=0):
            print(piece, end="", flush=True)
        print(m.batch(["One", "Two"], max_tokens=8, temperature=0))
"""
from . import _lib
from .model import Model, SpillwayError

__version__ = "0.1.0"


def library_version():
    """The version of the libspillway this package loaded."""
    return _lib.sw_version().decode("ascii")


__all__ = ["Model", "SpillwayError", "library_version", "__version__"]
