"""What every TLS server of the cluster (the apiserver's secure port, the kubelet's) sets on its ``SSLContext``."""

from __future__ import annotations

import ssl

__all__ = ["without_session_tickets"]


def without_session_tickets(context: ssl.SSLContext) -> ssl.SSLContext:
    """No TLS 1.3 session tickets (OpenSSL sends two per handshake by default).

    No client of the cluster resumes a session: client-go sets no ``ClientSessionCache``, so kubectl and every Go
    client make a full handshake per connection, and aiohttp and httpx do the same. The tickets were written for
    nobody, and with the OpenSSL 3.0 that Python links here they cost the server ~0.9 ms of a ~2.8 ms handshake
    (bench in the commit): a new cluster's first second has about fifty handshakes, each kubectl command one."""
    context.num_tickets = 0
    return context
