"""A small typed client of the ``thirteen.v1`` API: a channel (plaintext or TLS, with gRPC's own
retries of ``UNAVAILABLE`` and ``ABORTED``), the stubs, and refusals read back with their
``ErrorInfo``. The demo and the dispute console use it; so can any Python program::

    from service.client import ApiError, connect

    with connect("127.0.0.1:50051") as client:
        try:
            balance = client.call(client.wallets.GetBalance, GetBalanceRequest(player_id="a"))
        except ApiError as error:
            print(error.code.name, error.reason, error.message)
"""

from service.client.channel import RETRIED, aio_channel, channel, credentials
from service.client.client import Client, connect
from service.client.errors import ApiError, error_info

__all__ = [
    "RETRIED",
    "ApiError",
    "Client",
    "aio_channel",
    "channel",
    "connect",
    "credentials",
    "error_info",
]
