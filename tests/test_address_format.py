"""The addressing pass formats IPv4 addresses from integers (twin.compiler.address.dotted, dotted_run)
instead of building ipaddress objects: the same text as Python's ipaddress (RFC 791 dotted decimal)."""

from __future__ import annotations

import ipaddress
import random

from twin.compiler.address import dotted, dotted_run


def test_dotted_is_ipaddress_text():
    rng = random.Random(3)
    for a in [0, 1, 255, 256, 2**24 - 1, 2**24, 2**32 - 1] + [rng.randrange(2**32) for _ in range(5000)]:
        assert dotted(a) == str(ipaddress.IPv4Address(a))


def test_dotted_run_crosses_octet_boundaries():
    # a /31 run from 10.0.0.250 crosses into 10.0.1.x, one from 10.255.255.254 into 11.0.0.x
    for start, step in ((int(ipaddress.IPv4Address("10.0.0.250")), 2), (int(ipaddress.IPv4Address("10.255.255.254")), 2),
                        (int(ipaddress.IPv4Address("192.168.0.1")), 1), (7, 3)):
        want = [f"{ipaddress.IPv4Address(start + k * step)}/31" for k in range(700)]
        assert dotted_run(start, 700, step, "/31") == want
    assert dotted_run(5, 0, 1, "/32") == []
