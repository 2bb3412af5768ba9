"""Generate the Python stubs for ``protos/thirteen/v1`` into ``service/_generated``, each
with a typed ``.pyi`` (protoc's for messages, mypy-protobuf's for services).

``make setup`` runs this. protoc names Python modules after proto paths (``thirteen.v1``), so
the imports between generated files are rewritten to live under ``service._generated``.
"""

from __future__ import annotations

import re
import shutil
import sys
from importlib import resources
from pathlib import Path

from grpc_tools import protoc  # type: ignore[import-untyped]  # grpcio-tools has no stubs

ROOT = Path(__file__).resolve().parent.parent
PROTOS = ROOT / "protos"
OUT = ROOT / "service" / "_generated"
PACKAGE = "service._generated"
# mypy-protobuf's plugin types the service stubs (*_pb2_grpc.pyi); it is found beside this
# interpreter, since PATH need not hold the venv's scripts.
MYPY_GRPC = Path(sys.executable).parent / "protoc-gen-mypy_grpc"


def generate() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    sources = sorted(str(p.relative_to(PROTOS)) for p in PROTOS.rglob("*.proto"))
    well_known = str(resources.files("grpc_tools") / "_proto")
    status = protoc.main(
        [
            "protoc",
            f"-I{PROTOS}",
            f"-I{well_known}",
            f"--python_out={OUT}",
            f"--pyi_out={OUT}",
            f"--grpc_python_out={OUT}",
            f"--plugin=protoc-gen-mypy_grpc={MYPY_GRPC}",
            f"--mypy_grpc_out=quiet:{OUT}",
            *sources,
        ]
    )
    if status != 0:
        sys.exit(f"protoc failed with status {status}")
    for path in OUT.rglob("*.py*"):
        text = re.sub(
            r"^from thirteen\.v1 import",
            f"from {PACKAGE}.thirteen.v1 import",
            path.read_text(),
            flags=re.M,
        )
        path.write_text(text)
    for folder in [OUT, *[p for p in OUT.rglob("*") if p.is_dir()]]:
        (folder / "__init__.py").touch()


if __name__ == "__main__":
    generate()
