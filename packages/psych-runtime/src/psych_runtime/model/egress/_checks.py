"""The egress checks every request passes before a connection is opened, whatever the client.

`checked_addresses` is the policy half of the seam's transports: it knows no HTTP library, so
each client the runtime hands out (httpx for `Egress`, httpx2 for MCP servers) refuses the
same requests with the same messages, and connects only to the addresses it returns.
"""

from __future__ import annotations

import ipaddress
import socket

from psych_core import EgressError, EgressRefused
from psych_runtime.model.egress._policy import EgressPolicy, HostResolver, ip_literal


async def checked_addresses(
    policy: EgressPolicy,
    resolve: HostResolver,
    *,
    scheme: str,
    host: str,
    port: int | None,
    shown: str,
) -> list[str]:
    """The addresses a request may connect to, in the order to try them; or why it may not.

    Checks, in order: the scheme (http or https), the host against the policy's allowlist
    (before resolving it, so a refused name is never looked up), then every address the host
    resolves to against the policy's address rules. Connect only to an address returned here,
    so the name cannot resolve to something else in between.

    Args:
        policy: where requests may go.
        resolve: how host names are resolved (an IP literal is not resolved).
        scheme: the URL's scheme, lower case.
        host: the URL's host, a name or an IP literal.
        port: the URL's port; None for the scheme's default.
        shown: the URL as errors show it (without query or fragment).

    Raises:
        EgressRefused: the policy refuses the scheme, the host or one of its addresses.
        EgressError: the host cannot be resolved (``sent=False``: nothing was sent).
    """
    if scheme not in ("http", "https"):
        raise EgressRefused(
            f"{shown}: only http and https requests may leave", url=shown, host=host
        )
    if not policy.host_allowed(host):
        allowed = ", ".join(policy.allow_hosts or ())
        raise EgressRefused(
            f"{shown}: host {host!r} is not on the egress allowlist ({allowed}); "
            "add it to EgressPolicy(allow_hosts=...)",
            url=shown,
            host=host,
        )
    addresses = await _resolved(resolve, host, port or _default_port(scheme), shown)
    for address in addresses:
        refusal = policy.address_refusal(ipaddress.ip_address(address))
        if refusal is not None:
            said = host if host == address else f"{host} ({address})"
            raise EgressRefused(
                f"{shown}: refused before connecting: {said} is {refusal}",
                url=shown,
                host=host,
                address=address,
            )
    return addresses


async def _resolved(resolve: HostResolver, host: str, port: int, shown: str) -> list[str]:
    literal = ip_literal(host)
    if literal is not None:
        return [str(literal)]
    try:
        found = list(await resolve(host, port))
    except (OSError, socket.gaierror) as exc:
        raise EgressError(
            f"{shown}: cannot resolve host {host!r} ({exc}); check the name and the network",
            url=shown,
            sent=False,
        ) from None
    if not found:
        raise EgressError(f"{shown}: host {host!r} resolves to no address", url=shown, sent=False)
    return found


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80
