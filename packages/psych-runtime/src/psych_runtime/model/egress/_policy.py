"""What the egress seam lets out: which hosts, and which kinds of address."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

AddressKind = Literal["public", "loopback", "private", "link_local", "reserved"]
"""How the policy sees an address. Only ``public`` addresses pass without being allowed."""

HostResolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""Resolves ``(host, port)`` to IP address strings; the system resolver by default."""


@dataclass(frozen=True, slots=True)
class EgressPolicy:
    """Where outbound HTTP requests may go.

    A request passes when its host is allowed by `allow_hosts` **and** every address the host
    resolves to is allowed. Names are resolved before anything connects, and the connection
    goes to the address that was checked, so ``localhost`` or a name that resolves to a
    private address is refused just like the address itself.

    Attributes:
        allow_hosts: host names (or IP literals) requests may go to; ``"*.example.com"``
            allows every subdomain of example.com. None allows any host.
        allow_loopback: let requests reach 127.0.0.0/8 and ::1 (a model server on this
            machine, tests).
        allow_private: let requests reach private networks (10/8, 172.16/12, 192.168/16,
            100.64/10, fc00::/7, site-local fec0::/10).
        allow_networks: further networks (CIDR strings) to let through, of any kind; the only
            way to reach link-local addresses such as the cloud metadata service
            (169.254.169.254).

    An IPv6 address that carries an IPv4 address the packets are delivered to (IPv4-mapped
    ``::ffff:a.b.c.d``, 6to4 ``2002::/16``, Teredo ``2001::/32``, NAT64 ``64:ff9b::/96``) is
    judged as that IPv4 address, so none of them reaches what the IPv4 form may not. The
    local-use NAT64 prefix ``64:ff9b:1::/48`` is refused unless allowed by `allow_networks`:
    where it carries the IPv4 address depends on the translator's prefix length, so it cannot
    be read off.
    """

    allow_hosts: tuple[str, ...] | None = None
    allow_loopback: bool = False
    allow_private: bool = False
    allow_networks: tuple[str, ...] = ()
    _networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        networks = tuple(ipaddress.ip_network(cidr, strict=False) for cidr in self.allow_networks)
        object.__setattr__(self, "_networks", networks)
        if self.allow_hosts is not None:
            hosts = tuple(_normal_host(host) for host in self.allow_hosts)
            object.__setattr__(self, "allow_hosts", hosts)

    def host_allowed(self, host: str) -> bool:
        """Whether `host` passes the host allowlist (addresses are checked separately)."""
        if self.allow_hosts is None:
            return True
        host = _normal_host(host)
        for allowed in self.allow_hosts:
            if allowed.startswith("*.") and host.endswith(allowed[1:]):
                return True  # a subdomain, never the domain itself
            if host == allowed:
                return True
        return False

    def address_refusal(self, address: IPAddress) -> str | None:
        """Why `address` may not be reached, or None when it may."""
        target = embedded_ipv4(address) or address
        if any(a in network for a in {address, target} for network in self._networks):
            return None
        kind = address_kind(address)
        if kind == "public":
            return None
        carried = f" ({_family(address)} for {target})" if target != address else ""
        if kind == "loopback":
            if self.allow_loopback:
                return None
            return f"a loopback address{carried}; allow it with EgressPolicy(allow_loopback=True)"
        if kind == "private":
            if self.allow_private:
                return None
            return f"a private address{carried}; allow it with EgressPolicy(allow_private=True)"
        if kind == "link_local":
            return (
                f"a link-local address{carried}, where cloud metadata services live; if you "
                f"mean it, allow it with EgressPolicy(allow_networks=({str(address)!r},))"
            )
        if address in _NAT64_LOCAL:
            return (
                "a local-use NAT64 address (64:ff9b:1::/48), whose IPv4 address depends on "
                "the translator's prefix length; if you mean it, allow it with "
                f"EgressPolicy(allow_networks=({str(_NAT64_LOCAL)!r},))"
            )
        return (
            f"a reserved address{carried}; if you mean it, "
            f"allow it with EgressPolicy(allow_networks=({str(address)!r},))"
        )


def address_kind(address: IPAddress) -> AddressKind:
    """Classify an address: ``public`` or one of the kinds the policy refuses by default.

    An IPv6 address that carries an IPv4 destination (see `embedded_ipv4`) is the kind of that
    IPv4 address; the local-use NAT64 prefix 64:ff9b:1::/48 is ``reserved``.
    """
    if isinstance(address, ipaddress.IPv6Address):
        if address in _NAT64_LOCAL:
            return "reserved"
        if address.is_site_local:
            return "private"  # fec0::/10: deprecated, but still routed inside some networks
    address = embedded_ipv4(address) or address
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link_local"
    if address.is_unspecified or address.is_multicast or address.is_reserved:
        return "reserved"
    if address.is_private or address in _SHARED_ADDRESS_SPACE:
        return "private"
    if not address.is_global:
        return "reserved"
    return "public"


_SHARED_ADDRESS_SPACE = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT
# RFC 6052: the well-known prefix carries the IPv4 address in its last 32 bits. RFC 8215: the
# local-use prefix lets each network pick the prefix length, and with it where the bits go.
_NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address delivers to, when it is one of the forms that carry one.

    IPv4-mapped ``::ffff:a.b.c.d``, 6to4 ``2002:aabb:ccdd::/48`` (the relay sends to
    a.b.c.d), Teredo ``2001::/32`` (its client address, where the relay sends), and NAT64's
    well-known prefix ``64:ff9b::a.b.c.d`` (the translator sends to a.b.c.d). None for any
    other address, IPv4 ones included.
    """
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64_WELL_KNOWN:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _family(address: IPAddress) -> str:
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return "IPv4-mapped"
        if address.sixtofour is not None:
            return "6to4"
        if address.teredo is not None:
            return "Teredo"
    return "NAT64"


def _normal_host(host: str) -> str:
    return host.strip().lower().rstrip(".").removeprefix("[").removesuffix("]")


def ip_literal(host: str) -> IPAddress | None:
    """The address `host` spells, when it is an IP literal rather than a name."""
    try:
        return ipaddress.ip_address(_normal_host(host))
    except ValueError:
        return None


async def system_resolve(host: str, port: int) -> Sequence[str]:
    """Resolve `host` with the system resolver: every address, in the order to try them."""
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    addresses: list[str] = []
    for _family, _type, _proto, _canonname, sockaddr in infos:
        address = str(sockaddr[0])
        if address not in addresses:
            addresses.append(address)
    return addresses
