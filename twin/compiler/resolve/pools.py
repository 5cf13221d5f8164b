"""Address pools sized from the fabric: defaults that grow, and the smallest prefix when a pool is short.

The addressing pass hands out one loopback per switch, a /31 per switch-to-switch link and an aligned
subnet per leaf (its NICs plus network, broadcast and gateway). Validation knows how many of each the
fabric will need before any graph exists (:func:`needs`, from the same counts the fabric pass wires),
so it can

- grow a pool the user left at its default: the smallest prefix that holds the fabric, at the free
  aligned block of 10.0.0.0/8 nearest to the default (a warning says which); and
- refuse a pool the user set too small with a located error naming the smallest prefix that fits and
  a free block of that size, e.g. ``needs 112,640 /31s: a /14 or larger, e.g. 10.248.0.0/14``.

The Meta sites fit the defaults (``10.252.0.0/15`` holds 65,536 /31s; meta-24k-roce uses 38,912), so
their addresses do not move; 98,304 GPUs (32 of its zones) need 112,640 and get ``10.248.0.0/14``.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass, replace

from twin.compiler.resolve.spec import Spec
from twin.compiler.resolve.tree_sizing import rail_hosts
from twin.lang.diagnostics import Severity
from twin.lang.site.families import AI_ZONE_LAYOUT, CLOS_LAYOUT, UNIT_LAYOUT

POOLS = ("loopback_pool", "p2p_pool", "rack_pool")  # the order defaults are fitted in
PRIVATE_BLOCKS = tuple(ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))  # RFC 1918
Finding = tuple[Severity, tuple, str, str]


@dataclass(frozen=True)
class Needs:
    """What the addressing pass will hand out for a spec."""

    switches: int  # one /32 loopback each
    links: int  # switch-to-switch links, one /31 each
    leaf_nics: tuple[int, ...]  # NICs behind each leaf, in the order the subnets are allocated

    def addresses(self, pool: str) -> int:
        """Addresses ``pool`` must hold (a prefix of at least this size fits).

        >>> Needs(switches=5, links=3, leaf_nics=(16, 16, 5)).addresses("rack_pool")  # /27, /27, /29
        72
        """
        if pool == "loopback_pool":
            return self.switches + 2  # the network and broadcast addresses are not handed out
        if pool == "p2p_pool":
            return 2 * self.links
        return rack_span(self.leaf_nics)


def subnet_size(nics: int) -> int:
    """Addresses of one leaf's subnet: its NICs plus network, broadcast and gateway, a power of two >= 4.

    >>> subnet_size(16), subnet_size(8), subnet_size(0)
    (32, 16, 4)
    """
    return 1 << max(2, math.ceil(math.log2(nics + 3)))


def rack_span(leaf_nics: tuple[int, ...]) -> int:
    """Addresses from the pool's start to the end of the last leaf subnet, each aligned to its size."""
    cursor = 0
    for nics in leaf_nics:
        size = subnet_size(nics)
        cursor = (cursor + size - 1) // size * size + size
    return cursor


def smallest_prefix(addresses: int) -> int:
    """The longest IPv4 prefix length whose block holds ``addresses``.

    >>> smallest_prefix(2 * 112_640), smallest_prefix(2 * 65_536), smallest_prefix(1)
    (14, 15, 32)
    """
    return 32 - max(0, math.ceil(math.log2(max(1, addresses))))


def needs(spec: Spec) -> Needs:
    """Switches, switch-to-switch links and leaf NICs of the fabric ``spec`` describes (RoCE families):
    the counts come from the fabric's shape, the NICs per leaf from its attachment rule (rails that
    share a leaf included), plus the fabric attachments each leaf carries (they join its subnet)."""
    shape = spec.shape
    switches = shape.switches
    links = sum(b.links for b in shape.boundaries[1:] if b.name not in {a.tier for a in shape.attachments})
    leaf = shape.tiers[0]
    per_leaf = LEAF_NICS[spec.family.layout](spec)
    extra = tuple(shape.attach_ports(leaf.role, i) for i in range(leaf.count))
    return Needs(switches, links, tuple(n + x for n, x in zip(per_leaf, extra)))


def _zone_leaf_nics(spec: Spec) -> tuple[int, ...]:
    """An AI zone's rack switch serves its share of the rack's NICs."""
    leaf = spec.shape.tiers[0]
    return (leaf.down,) * leaf.count


def _tree_leaf_nics(spec: Spec) -> tuple[int, ...]:
    shape = spec.shape
    ts = shape.tree
    k, h = ts.radix, max(1, ts.radix // 2)
    R = shape.rails_per_switch
    g, servers = rail_hosts(spec)
    if spec.family.rail_groups and ts.tiers > 1:
        group = max(1, h // R)
        groups = math.ceil(servers / group)
        return tuple(R * min(group, servers - j * group) for j in range(groups) for _ in range(max(1, g // R))) * shape.planes
    n = ts.endpoints  # NICs of one tree (one rail, or the rails sharing its switches, of rail-only)
    per = k if ts.tiers == 1 else h
    return tuple(min(per, n - i * per) for i in range(ts.switches[0])) * (shape.trees * shape.planes)


def _unit_leaf_nics(spec: Spec) -> tuple[int, ...]:
    """A scalable unit's leaf takes its hosts on its rail (whole units: the checks refuse a part-filled one)."""
    leaf = spec.shape.tiers[0]
    return (leaf.down,) * leaf.count


# NICs on each leaf, per layout (twin/lang/site/families.py)
LEAF_NICS = {AI_ZONE_LAYOUT: _zone_leaf_nics, CLOS_LAYOUT: _tree_leaf_nics, UNIT_LAYOUT: _unit_leaf_nics}


def fit(spec: Spec) -> tuple[Spec, list[Finding]]:
    """``spec`` with every default pool grown to hold the fabric, and findings for pools that do not.

    A pool the user set and that is too small is an error naming the smallest prefix that fits; a
    default that is too small is replaced by the nearest free block of that size in 10.0.0.0/8 (warning).
    """
    f = spec.fabric
    if f.technology.value != "roce":
        return spec, []
    r = f.routing
    need = needs(spec)
    names = [p for p in POOLS if not (p == "p2p_pool" and r.unnumbered)]
    findings: list[Finding] = []
    nets: dict[str, ipaddress.IPv4Network] = {}
    for p in names:
        try:
            nets[p] = ipaddress.IPv4Network(getattr(r, p), strict=True)
        except ValueError:
            findings.append((Severity.ERROR, ("fabric", "routing", p), f"'{getattr(r, p)}' is not an IPv4 network",
                             "an IPv4 prefix such as 10.0.0.0/12 (IPv6 addresses come from the ipv6 option)"))
    if findings:
        return spec, findings
    grown: dict[str, str] = {}
    for p in sorted(names, key=lambda p: p not in r.model_fields_set):  # the user's pools stay where they are
        net, want = nets[p], need.addresses(p)
        if net.num_addresses >= want:
            continue
        plen = smallest_prefix(want)
        others = [n for q, n in nets.items() if q != p]
        free = _free_block(plen, net, others)
        what = _what(p, net, need)
        if p in r.model_fields_set:
            findings.append((Severity.ERROR, ("fabric", "routing", p), what,
                             f"a /{plen} or larger" + (f", e.g. {free}" if free else "")))
        elif free is None:
            findings.append((Severity.ERROR, ("fabric", "routing"), f"the default {p} {what}, and 10.0.0.0/8 has no free /{plen}",
                             f"{p}: a /{plen} or larger"))
        else:
            nets[p] = free
            grown[p] = str(free)
            findings.append((Severity.WARNING, ("fabric", "routing"), f"the default {p} {what}: using {free}",
                             f"{p}: a /{plen} or larger of your choice to place it elsewhere"))
    if not grown:
        return spec, findings
    routing = r.model_copy(update=grown)
    site = spec.site.model_copy(update={"fabric": f.model_copy(update={"routing": routing})})
    return replace(spec, site=site), findings


def _what(pool: str, net: ipaddress.IPv4Network, need: Needs) -> str:
    if pool == "p2p_pool":
        return f"{net} holds {net.num_addresses // 2:,} /31s; the fabric needs {need.links:,}"
    if pool == "loopback_pool":
        return f"{net} holds {max(0, net.num_addresses - 2):,} loopbacks; the fabric has {need.switches:,} switches"
    return f"{net} holds {net.num_addresses:,} addresses; the {len(need.leaf_nics):,} leaf subnets span {need.addresses(pool):,}"


def _free_block(plen: int, near: ipaddress.IPv4Network, taken: list[ipaddress.IPv4Network]) -> ipaddress.IPv4Network | None:
    """The aligned /plen that overlaps no ``taken`` pool and starts nearest to ``near`` (the lower one on a
    tie), inside the private block holding ``near`` (else its /8); None if there is none.

    >>> _free_block(14, ipaddress.IPv4Network("10.252.0.0/15"), [ipaddress.IPv4Network("10.255.0.0/16")])
    IPv4Network('10.248.0.0/14')
    """
    space = next((s for s in PRIVATE_BLOCKS if near.subnet_of(s)), ipaddress.IPv4Network((int(near.network_address) >> 24 << 24, 8)))
    if plen < space.prefixlen:
        return None
    size, at = 1 << (32 - plen), int(near.network_address)
    first, end = int(space.network_address), int(space.broadcast_address) + 1
    down = at // size * size  # candidates below (and at) ``near``, walking down, and above it, walking up
    up = down + size
    while down >= first or up < end:
        if up >= end or (down >= first and at - down <= up - at):
            a, down = down, down - size
        else:
            a, up = up, up + size
        cand = ipaddress.IPv4Network((a, plen))
        if not any(cand.overlaps(t) for t in taken):
            return cand
    return None
