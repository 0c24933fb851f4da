#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Captures TCP segments with payload on one interface (AF_PACKET, before tc ingress) for a
number of seconds and prints, per destination port, what their IP headers carried: DSCP
values, ECN codepoints of first transmissions and of retransmissions (segments that repeat
sequence space already seen) apart, IPv4 header checksums that do not verify. One JSON
object on stdout. A veth delivers GSO packets whole: a "segment" may be many on a wire.

With URGENCY (DSCP values, most urgent first: the sender's band map) it also follows the
fabric order guard: "rises" counts first transmissions whose DSCP is more urgent than the
flow's previous first transmission's, "rises_unacked" those of them sent while bytes before
them were unacknowledged, judged by the highest ACK the receiver had sent on the flow before
the segment arrived (the ACKs leave IFACE, so they are captured here too, in order).
With RISE (PORT:OFFSET, the stream offset, from 1, where that port's level rises) it also
counts "holdable": first transmissions at or past OFFSET, before the flow's first rise, that
arrived while bytes before them were unacknowledged, the packets a guard had to keep.

New data can arrive out of order here (a veth hands packets to the CPU that sent them, so two
CPUs' backlogs can swap them): a segment is a retransmission only if it repeats bytes already
seen; one that fills a hole is counted as "reordered" and its ECN as a first transmission's.

Segments without payload from the sender (SYN, pure ACKs, FIN) are counted apart by DSCP
("control_dscp").

Usage: dscp_capture.py IFACE SECONDS [URGENCY [RISE]]
"""
import json
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003


def ipv4_sum_ok(hdr):
    s = sum(struct.unpack("!%dH" % (len(hdr) // 2), hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s == 0xFFFF


def overlaps_then_add(seen, start, end):
    """True if [start, end) overlaps a range in seen (sorted, disjoint); then merges it in."""
    hit = any(s < end and start < e for s, e in seen)
    merged = [(start, end)]
    for s, e in seen:
        if e < merged[0][0] or s > merged[0][1]:
            merged.append((s, e))
        else:
            merged[0] = (min(s, merged[0][0]), max(e, merged[0][1]))
    seen[:] = sorted(merged)
    return hit


def main():
    iface, secs = sys.argv[1], float(sys.argv[2])
    urgency = [int(v) for v in sys.argv[3].split(",")] if len(sys.argv) > 3 else []
    rise_port, rise_rel = None, None
    if len(sys.argv) > 4:
        rise_port, rise_off = (int(v) for v in sys.argv[4].split(":"))
        rise_rel = rise_off - 1  # offset 1 is the first byte after the SYN
    acks = {}  # port -> highest ACK number the receiver sent from it
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((iface, 0))
    s.settimeout(0.2)
    ports, control = {}, {}
    end = time.time() + secs
    while time.time() < end:
        try:
            frame, addr = s.recvfrom(1 << 17)
        except socket.timeout:
            continue
        outgoing = addr[2] == socket.PACKET_OUTGOING
        proto = struct.unpack("!H", frame[12:14])[0]
        off = 14
        if proto == 0x0800:
            ihl = (frame[off] & 0x0F) * 4
            hdr = frame[off:off + ihl]
            ds, l4p, total = hdr[1], hdr[9], struct.unpack("!H", hdr[2:4])[0]
            csum_ok = ipv4_sum_ok(hdr)
            l4 = off + ihl
            end_ip = off + total if total else len(frame)
        elif proto == 0x86DD:
            first = struct.unpack("!I", frame[off:off + 4])[0]
            ds, l4p = (first >> 20) & 0xFF, frame[off + 6]
            plen = struct.unpack("!H", frame[off + 4:off + 6])[0]
            csum_ok = True
            l4 = off + 40
            end_ip = l4 + plen if plen else len(frame)
        else:
            continue
        if l4p != 6:
            continue
        if outgoing:  # the receiver's ACKs: the highest per port, in sequence space
            sport = struct.unpack("!H", frame[l4:l4 + 2])[0]
            ack = struct.unpack("!I", frame[l4 + 8:l4 + 12])[0]
            if frame[l4 + 13] & 0x10 and (sport not in acks or
                                          (ack - acks[sport]) & 0xFFFFFFFF < 1 << 31):
                acks[sport] = ack
            continue
        dport = struct.unpack("!H", frame[l4 + 2:l4 + 4])[0]
        seq = struct.unpack("!I", frame[l4 + 4:l4 + 8])[0]
        doff = (frame[l4 + 12] >> 4) * 4
        payload = min(end_ip, len(frame)) - (l4 + doff)
        if payload <= 0:  # the sender's SYN, pure ACKs, FIN: their DSCP apart
            cd = control.setdefault(dport, {})
            cd[str(ds >> 2)] = cd.get(str(ds >> 2), 0) + 1
            continue
        p = ports.setdefault(dport, {"segments": 0, "dscp": {}, "ecn_new": {}, "ecn_retransmitted": {},
                                     "bad_ipv4_csum": 0,
                                     "retransmitted": 0, "retransmitted_dscp": {},
                                     "reordered": 0, "reordered_at": [], "rises": 0, "rises_unacked": 0, "holdable": 0,
                                     "_base": seq, "_hi": 0, "_last": None, "_seen": []})
        rel = (seq - p["_base"]) & 0xFFFFFFFF
        dscp, ecn = str(ds >> 2), str(ds & 3)
        p["segments"] += 1
        p["dscp"][dscp] = p["dscp"].get(dscp, 0) + 1
        p["bad_ipv4_csum"] += 0 if csum_ok else 1
        in_order = rel >= p["_hi"]
        if overlaps_then_add(p["_seen"], rel, rel + payload):
            p["retransmitted"] += 1
            p["retransmitted_dscp"][dscp] = p["retransmitted_dscp"].get(dscp, 0) + 1
            p["ecn_retransmitted"][ecn] = p["ecn_retransmitted"].get(ecn, 0) + 1
        elif not in_order:
            p["reordered"] += 1
            if len(p["reordered_at"]) < 8:  # where and with which DSCP, for a reader
                p["reordered_at"].append([rel, payload, p["_hi"], int(dscp)])
            p["ecn_new"][ecn] = p["ecn_new"].get(ecn, 0) + 1
        else:
            p["ecn_new"][ecn] = p["ecn_new"].get(ecn, 0) + 1
            ack = acks.get(dport)
            unacked = ack is None or 0 < (seq - ack) & 0xFFFFFFFF < 1 << 31
            if dport == rise_port and rel >= rise_rel and p["rises"] == 0 and unacked:
                p["holdable"] += 1
            if ds >> 2 in urgency:
                rank = urgency.index(ds >> 2)
                if p["_last"] is not None and rank < p["_last"]:
                    p["rises"] += 1
                    p["rises_unacked"] += 1 if unacked else 0
                p["_last"] = rank
        p["_hi"] = max(p["_hi"], rel + payload)
    for port, p in ports.items():
        del p["_base"], p["_hi"], p["_last"], p["_seen"]
        p["control_dscp"] = control.get(port, {})
    print(json.dumps({str(k): v for k, v in ports.items()}))


if __name__ == "__main__":
    main()
