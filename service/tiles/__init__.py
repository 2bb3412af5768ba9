"""The transparency log served as C2SP ``tlog-tiles`` over read-only HTTP
(``thirteen serve --tiles HOST:PORT``): ``endpoint``."""

from service.tiles.endpoint import TilesEndpoint

__all__ = ["TilesEndpoint"]
