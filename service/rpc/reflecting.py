"""What server reflection serves: every known service's files, where the ``thirteen.v1`` files
also name ``google/rpc/error_details.proto`` among their imports. The API's errors carry
``google.rpc.ErrorInfo`` (and ``RetryInfo``, ``BadRequest``) in their details, but no
``.proto`` of the API imports them, so a client that learns the schema by reflection (``buf
curl``, grpcurl) would see those details as undecoded bytes; named as an import, their file
comes with the API's and they print decoded."""

from __future__ import annotations

from collections.abc import Iterable

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import FileDescriptor
from google.rpc import error_details_pb2

API_PACKAGE = "thirteen.v1"
DETAILS = error_details_pb2.DESCRIPTOR


def pool(service_names: Iterable[str]) -> descriptor_pool.DescriptorPool:
    """A descriptor pool holding the files of ``service_names`` with their imports, the API's
    files importing the error details' file too."""
    default = descriptor_pool.Default()
    files: dict[str, FileDescriptor] = {}
    for name in service_names:
        _with_imports(default.FindFileContainingSymbol(name), files)
    _with_imports(DETAILS, files)
    served = descriptor_pool.DescriptorPool()
    added: set[str] = set()
    for file in files.values():
        _add(file, files, served, added)
    return served


def _with_imports(file: FileDescriptor, files: dict[str, FileDescriptor]) -> None:
    if file.name in files:
        return
    files[file.name] = file
    for imported in file.dependencies:
        _with_imports(imported, files)


def _add(
    file: FileDescriptor,
    files: dict[str, FileDescriptor],
    served: descriptor_pool.DescriptorPool,
    added: set[str],
) -> None:
    """``file`` into ``served`` after its imports (a pool refuses a file before them)."""
    if file.name in added:
        return
    proto = descriptor_pb2.FileDescriptorProto()
    file.CopyToProto(proto)
    if proto.package == API_PACKAGE and DETAILS.name not in proto.dependency:
        proto.dependency.append(DETAILS.name)
    for imported in proto.dependency:
        _add(files[imported], files, served, added)
    served.Add(proto)
    added.add(file.name)
