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
DESCRIPTORS = "thirteen.v1.binpb"
"""The API's file descriptor set, with its imports and comments, beside the stubs (and in the
wheel): what other languages' tools and ``buf`` read instead of the ``.proto`` files."""
# mypy-protobuf's plugin types the service stubs (*_pb2_grpc.pyi); it is found beside this
# interpreter, since PATH need not hold the venv's scripts. A build without it (a wheel built
# where mypy-protobuf is not installed) has every stub, only not that .pyi.
MYPY_GRPC = Path(sys.executable).parent / "protoc-gen-mypy_grpc"


def generate(out: Path = OUT, protos: Path = PROTOS) -> None:
    """The stubs of every ``.proto`` under ``protos`` into ``out`` (replaced whole)."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    sources = sorted(str(p.relative_to(protos)) for p in protos.rglob("*.proto"))
    well_known = str(resources.files("grpc_tools") / "_proto")
    typed = (
        [f"--plugin=protoc-gen-mypy_grpc={MYPY_GRPC}", f"--mypy_grpc_out=quiet:{out}"]
        if MYPY_GRPC.exists()
        else []
    )
    status = protoc.main(
        [
            "protoc",
            f"-I{protos}",
            f"-I{well_known}",
            f"--python_out={out}",
            f"--pyi_out={out}",
            f"--grpc_python_out={out}",
            *typed,
            f"--descriptor_set_out={out / DESCRIPTORS}",
            "--include_imports",
            "--include_source_info",
            *sources,
        ]
    )
    if status != 0:
        sys.exit(f"protoc failed with status {status}")
    for path in out.rglob("*.py*"):
        text = re.sub(
            r"^from thirteen\.v1 import",
            f"from {PACKAGE}.thirteen.v1 import",
            path.read_text(),
            flags=re.M,
        )
        path.write_text(text)
    for folder in [out, *[p for p in out.rglob("*") if p.is_dir()]]:
        (folder / "__init__.py").touch()


if __name__ == "__main__":
    generate()
