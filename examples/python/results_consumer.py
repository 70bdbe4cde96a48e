#!/usr/bin/env python3
"""Reads push-connector's results stream: prunes dead tokens and counts each campaign.

    results_consumer.py AMQP_URL [--prefix push] [--offset-file FILE] [--until N] [--idle SECONDS]

Consumes the stream `<prefix>.results.stream` (contracts/result.schema.json) with a prefetch and
manual acks (a stream requires both; an ack only returns credit), from the offset after the one
stored in --offset-file (else from the first result kept). Results are delivered at least once:
each (job_id, mn_message_id) counts once, under its latest outcome (docs/contracts.md, "Latest
outcome per mn_message_id"). A token whose latest outcome is `invalid_token` is to be deleted
from your database: this script lists them.

Stops after --until results, or after --idle seconds without one; then stores the offset and
prints one JSON object: {"results": N, "campaigns": {C: {outcome: count}}, "prune": [tokens]}.
Needs pika (pip install pika, or Debian's python3-pika).
"""
import argparse
import json
import os

import pika


def later(a, b):
    """True when result a outranks b: more replays, then later completed_at, then not dead_lettered."""
    def rank(r):
        return (r.get("replays", 0), r["completed_at"], 0 if r["outcome"] == "dead_lettered" else 1)
    return rank(a) > rank(b)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("amqp_url")
    parser.add_argument("--prefix", default="push")
    parser.add_argument("--offset-file")
    parser.add_argument("--until", type=int, default=0)
    parser.add_argument("--idle", type=float, default=5.0)
    args = parser.parse_args()

    start = "first"
    if args.offset_file and os.path.exists(args.offset_file):
        with open(args.offset_file, encoding="utf-8") as f:
            start = int(f.read().strip()) + 1

    connection = pika.BlockingConnection(pika.URLParameters(args.amqp_url))
    channel = connection.channel()
    channel.basic_qos(prefetch_count=500)
    latest = {}
    last_offset = None
    seen = 0
    for method, properties, body in channel.consume(f"{args.prefix}.results.stream", arguments={"x-stream-offset": start},
                                                    inactivity_timeout=args.idle):
        if method is None:
            break  # idle: caught up
        result = json.loads(body)
        if result.get("schema_version", 1) > 1:
            raise SystemExit(f"result schema_version {result['schema_version']} is newer than this reader knows (1)")
        key = (result["job_id"], result["mn_message_id"])
        if key not in latest or later(result, latest[key]):
            latest[key] = result
        last_offset = properties.headers["x-stream-offset"]
        channel.basic_ack(method.delivery_tag)
        seen += 1
        if args.until and seen >= args.until:
            break
    channel.cancel()
    connection.close()

    if args.offset_file and last_offset is not None:
        with open(args.offset_file, "w", encoding="utf-8") as f:
            f.write(str(last_offset))
    campaigns = {}
    prune = []
    for result in latest.values():
        counts = campaigns.setdefault(result.get("campaign", ""), {})
        counts[result["outcome"]] = counts.get(result["outcome"], 0) + 1
        if result["outcome"] == "invalid_token" and "token" in result["target"]:
            prune.append(result["target"]["token"])
    print(json.dumps({"results": seen, "recipients": len(latest), "campaigns": campaigns, "prune": sorted(prune)}, sort_keys=True))


if __name__ == "__main__":
    main()
