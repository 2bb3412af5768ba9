"""The gRPC stubs are generated when the package is built (``service/protogen.py``), so a wheel
or an sdist built from a fresh clone carries them; everything else is in ``pyproject.toml``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildWithStubs(build_py):
    """``build_py``, then the stubs and the descriptor set generated into the build, where the
    wheel takes them from (an editable install has ``make setup`` generate them in place)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        spec = importlib.util.spec_from_file_location("protogen", ROOT / "service" / "protogen.py")
        assert spec is not None and spec.loader is not None
        protogen = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(protogen)  # not `import service`: the package is not built yet
        protogen.generate(Path(self.build_lib) / "service" / "_generated", ROOT / "protos")


setup(cmdclass={"build_py": BuildWithStubs})
