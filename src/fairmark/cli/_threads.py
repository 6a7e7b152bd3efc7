"""fairmark's own process loads numpy's and scipy's OpenBLAS with one thread; nothing it starts inherits that.

The OpenBLAS bundled with numpy (and the one with scipy) starts a pool of threads, one per CPU, when its library is
loaded, and they spin waiting for work: `import numpy, click` cost 0.27–0.28 s of user CPU, 0.15 s with
OPENBLAS_NUM_THREADS=1 (same wall, same peak RSS) — 0.12 s of CPU for nothing in every command that uses numpy,
whose arrays are far too small to gain from threads. OpenBLAS reads the variable once, in the constructor that runs
when the library is loaded, so the variables are set for exactly that moment — around the loading of numpy's and
scipy's compiled modules — and removed again. The environment fairmark records for a run and gives to workloads,
builds, tools, hosts and agents stays exactly the user's (tests/test_own_threads.py runs a workload that prints its
environment). A variable the user set is left as the user set it.

Standard library only: installed by `cli.main.entry` before anything can import numpy.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.machinery import ExtensionFileLoader, ModuleSpec
from types import ModuleType

# OpenBLAS (pthreads or OpenMP build) and an OpenMP runtime it may load
ONE_THREAD = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
LIBRARIES = ("numpy", "scipy")


@contextmanager
def one_thread() -> Iterator[None]:
    """Each of ONE_THREAD the user did not set is "1" inside, and unset again after."""
    added = [name for name in ONE_THREAD if name not in os.environ]
    for name in added:
        os.environ[name] = "1"
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


class _OneThreadLoader(ExtensionFileLoader):
    """A compiled module's libraries are loaded (dlopen, their constructors run) in create_module."""

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        with one_thread():
            return super().create_module(spec)


class OneThreadFinder:
    """Finds numpy's and scipy's modules with the finders after it, and loads their compiled ones in one_thread.
    (A meta path finder needs only find_spec; importlib.abc's base class would import 50 ms of modules.)"""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname.partition(".")[0] not in LIBRARIES:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec: ModuleSpec | None = find(fullname, path, target)
            if spec is not None:
                if type(spec.loader) is ExtensionFileLoader and spec.origin:
                    spec.loader = _OneThreadLoader(fullname, spec.origin)
                return spec
        return None


def install() -> None:
    """First in sys.meta_path, once. Without effect on a library already loaded."""
    if not any(isinstance(f, OneThreadFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, OneThreadFinder())
