#!/usr/bin/env python3
"""Publishes send jobs to push-connector the way the contract asks (contracts/asyncapi.yaml).

    publisher.py AMQP_URL FILE [--prefix push]

FILE holds jobs, one JSON object per line (JSON Lines) or one JSON document. Each job goes to the
direct exchange `<prefix>.jobs` with routing key `job`, or `job.high` when it says
"priority": "high"; persistent, `mandatory` (a job that routes nowhere comes back instead of
vanishing) and with publisher confirms: the broker confirms each job or the script stops with an
error naming it. A nack or a return means the job was NOT taken (a full queue refuses with
reject-publish): publish it again later. Delivery is at least once: a job published twice is
sent twice, since `job_id` is not an idempotency key.

Needs pika (pip install pika, or Debian's python3-pika). Prints one line: {"published": N}.
"""
import argparse
import json
import sys

import pika


def jobs(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        yield json.loads(text)
        return
    except json.JSONDecodeError:
        pass
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                yield json.loads(line)
            except json.JSONDecodeError as error:
                sys.exit(f"{path}:{number}: not JSON: {error}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("amqp_url")
    parser.add_argument("file")
    parser.add_argument("--prefix", default="push")
    args = parser.parse_args()

    connection = pika.BlockingConnection(pika.URLParameters(args.amqp_url))
    channel = connection.channel()
    channel.confirm_delivery()  # every basic_publish now waits for the broker's ack
    exchange = f"{args.prefix}.jobs"
    published = 0
    for job in jobs(args.file):
        key = "job.high" if job.get("priority") == "high" else "job"
        body = json.dumps(job, ensure_ascii=False).encode("utf-8")
        properties = pika.BasicProperties(content_type="application/json", delivery_mode=2)
        try:
            channel.basic_publish(exchange, key, body, properties, mandatory=True)
        except pika.exceptions.UnroutableError:
            sys.exit(f"job {job.get('job_id')!r}: returned unroutable (is the topology declared, the prefix right?)")
        except pika.exceptions.NackError:
            sys.exit(f"job {job.get('job_id')!r}: refused by the broker (queue full?): publish it again later")
        published += 1
    connection.close()
    print(json.dumps({"published": published}))


if __name__ == "__main__":
    main()
