#!/usr/bin/env python3
"""Cross-file rules of the deployment files, with the lists taken from the source.

Each rule prints `FAIL [rule] file: what` for what breaks it; exit 1 if any does.
  codes     every `--code X` (deploy/, docs/, README.md, docker-compose.yml) and every `code` an
            alert or its tests match is a code the source writes to that DLQ
            (Sources/PushCore/Contracts/DeadLetter.swift, DeadLetterEntry.brokerCodes)
  metrics   every push_connector_* metric the alerts, their tests, the dashboard and
            docs/operations.md name is one the source exports
  alerted   the metrics an operator must hear about each have an alert
  vhost     deploy/rabbitmq-definitions.json names the vhost every AMQP URL, KEDA trigger and AsyncAPI binding uses
  keda      every ScaledObject has a maxReplicaCount and scales on the job queue and the urgent queue
  runbooks  every alert has a runbook_url that is a URL to a heading of a document in docs/
Usage: check_coherence.py [ROOT]   (default: the repository)
"""
import glob
import json
import os
import re
import sys

import yaml

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
failures = []


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def fail(rule, where, what):
    failures.append(rule)
    print(f"FAIL [{rule}] {where}: {what}")


def enum_codes(source, name):
    body = re.search(r"enum " + name + r"\b[^{]*\{(.*?)\n\}", source, re.S).group(1)
    return re.findall(r'case \w+ = "([A-Z_]+)"', body)


def known_codes():
    contracts = read("Sources/PushCore/Contracts/DeadLetter.swift")
    entry = read("Sources/DeadLetterTools/DeadLetterEntry.swift")
    constants = dict(re.findall(r'static let (\w+) = "([A-Z_]+)"', entry))
    listed = re.search(r"static let brokerCodes = \[(.*?)\]", entry).group(1)
    broker = [constants.get(item.strip(), item.strip().strip('"')) for item in listed.split(",")]
    return enum_codes(contracts, "DeadLetterCode") + broker, enum_codes(contracts, "EventsDeadLetterCode") + broker


def exported_metrics():
    names = set()
    for path in glob.glob(os.path.join(ROOT, "Sources", "**", "*.swift"), recursive=True):
        with open(path, encoding="utf-8") as f:
            names |= set(re.findall(r'"(push_connector_[a-z_]+)"', f.read()))
    return names


def text_files():
    patterns = ["deploy/**/*.yaml", "deploy/**/*.yml", "deploy/**/*.service", "deploy/**/*.env", "deploy/**/*.json",
                "deploy/**/*.sh", "docs/**/*.md", "README.md", "docker-compose.yml", "deploy/README.md"]
    seen = set()
    for pattern in patterns:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True)):
            if path not in seen:
                seen.add(path)
                yield os.path.relpath(path, ROOT)


def alert_rules():
    rules = []
    for group in yaml.safe_load(read("deploy/prometheus/alerts.yml"))["groups"]:
        rules += [r for r in group["rules"] if "alert" in r]
    return rules


def check_codes(jobs, events):
    for path in text_files():
        for number, line in enumerate(read(path).splitlines(), 1):
            for match in re.finditer(r'--code"?,?\s*"?([A-Z][A-Z_]*)', line):
                # The DLQ the line names before the code; prose that names none: either.
                before = line[: match.start()]
                if re.search(r"events\W+dlq", before):
                    queue, known = "the events DLQ", events
                elif re.search(r"\bdlq\b", before):
                    queue, known = "the jobs DLQ", jobs
                else:
                    queue, known = "either DLQ", jobs + events
                if match.group(1) not in known:
                    fail("codes", f"{path}:{number}", f"--code {match.group(1)} is never written to {queue} (known: {', '.join(known)})")
    metric_codes = {"push_connector_dead_letters_total": jobs, "push_connector_events_dead_lettered_total": events}
    for path in ["deploy/prometheus/alerts.yml", "deploy/prometheus/alerts.test.yml", "deploy/grafana/push-connector.json"]:
        text = read(path)
        for metric, known in metric_codes.items():
            for selector in re.findall(metric + r"\{([^}]*)\}", text):
                for op, value in re.findall(r'code\s*(=~|=|!=|!~)\s*\\?"([^"\\]*)', selector):
                    for code in value.split("|"):
                        if code and code not in known:
                            fail("codes", path, f"{metric} with code {code}, which is never written (known: {', '.join(known)})")


def check_metrics(exported):
    for path in ["deploy/prometheus/alerts.yml", "deploy/prometheus/alerts.test.yml", "deploy/grafana/push-connector.json",
                 "docs/operations.md"]:
        for name in sorted(set(re.findall(r"push_connector_[a-z_]+", read(path)))):
            base = re.sub(r"_(bucket|sum|count)$", "", name)
            if name not in exported and base not in exported:
                fail("metrics", path, f"{name} is not a metric the source exports")


MUST_ALERT = ["push_connector_dead_letters_total", "push_connector_fcm_responses_total", "push_connector_projects_paused",
              "push_connector_app_ids_paused", "push_connector_config_reloads_total", "push_connector_lanes_connected",
              "push_connector_events_rejected_total", "push_connector_events_store_failures_total",
              "push_connector_events_dead_lettered_total"]
MUST_ALERT_QUEUES = ["push.jobs", "push.jobs.high", "push.jobs.dlq", "push.events", "push.results.stream"]


def check_alerted():
    expressions = " ".join(str(rule.get("expr", "")) for rule in alert_rules())
    for metric in MUST_ALERT:
        if metric not in expressions:
            fail("alerted", "deploy/prometheus/alerts.yml", f"no alert on {metric}")
    for queue in MUST_ALERT_QUEUES:
        if f'queue="{queue}"' not in expressions:
            fail("alerted", "deploy/prometheus/alerts.yml", f"no alert on the depth of {queue}")
    if 'up{job="push-connector"}' not in expressions:
        fail("alerted", "deploy/prometheus/alerts.yml", "no alert on up (a process that stopped answering)")


def check_vhost():
    definitions = json.loads(read("deploy/rabbitmq-definitions.json"))
    named = {item.get("vhost") for key in ("exchanges", "queues", "bindings") for item in definitions.get(key, [])}
    named |= {v.get("name") for v in definitions.get("vhosts", [])}
    if len(named) != 1:
        fail("vhost", "deploy/rabbitmq-definitions.json", f"names several vhosts: {sorted(map(str, named))}")
        return
    vhost = named.pop()
    for path in text_files():
        if path.startswith("docs/") or path == "README.md":
            continue
        for number, line in enumerate(read(path).splitlines(), 1):
            for url in re.findall(r"amqps?://[^\s\"',]+", line):
                path_part = re.sub(r"^amqps?://[^/]*", "", url).split("?")[0]
                used = path_part[1:].replace("%2f", "/").replace("%2F", "/") if path_part else "/"
                if used != vhost:
                    fail("vhost", f"{path}:{number}", f"{url} uses vhost {used!r}, the definitions file {vhost!r}")
            for used in re.findall(r"vhostName:\s*\"?([^,\s}\"]+)", line):
                if used != vhost:
                    fail("vhost", f"{path}:{number}", f"KEDA vhostName {used!r}, the definitions file {vhost!r}")
    # The AsyncAPI document's AMQP bindings name the same vhost (issue 51: they said "/push").
    for number, line in enumerate(read("contracts/asyncapi.yaml").splitlines(), 1):
        for used in re.findall(r"\bvhost:\s*\"?([^,\s}\"]+)", line):
            if used != vhost:
                fail("vhost", f"contracts/asyncapi.yaml:{number}", f"binding vhost {used!r}, the definitions file {vhost!r}")


def check_keda():
    for path in glob.glob(os.path.join(ROOT, "deploy/k8s/*.yaml")):
        for document in yaml.safe_load_all(open(path, encoding="utf-8")):
            if not document or document.get("kind") != "ScaledObject":
                continue
            where = f"{os.path.relpath(path, ROOT)} ScaledObject/{document['metadata']['name']}"
            spec = document["spec"]
            if not isinstance(spec.get("maxReplicaCount"), int):
                fail("keda", where, "no maxReplicaCount: replicas beyond what FCM's quota feeds only wait (worker.yaml says how to size it)")
            queues = {t.get("metadata", {}).get("queueName") for t in spec.get("triggers", []) if t.get("type") == "rabbitmq"}
            for queue in ("push.jobs", "push.jobs.high"):
                if queue not in queues:
                    fail("keda", where, f"no rabbitmq trigger on {queue}")


def slug(heading):
    heading = re.sub(r"[`*_]", "", heading.strip().lower())
    heading = re.sub(r"[^\w\- ]", "", heading)
    return heading.replace(" ", "-")


def check_runbooks():
    for rule in alert_rules():
        url = rule.get("annotations", {}).get("runbook_url", "")
        match = re.match(r"https://[^/\s]+/(docs/[\w.-]+\.md)#([\w-]+)$", url)
        if not match:
            fail("runbooks", "deploy/prometheus/alerts.yml", f"{rule['alert']}: runbook_url {url!r} is not https://HOST/docs/FILE.md#ANCHOR")
            continue
        document, anchor = match.groups()
        if not os.path.exists(os.path.join(ROOT, document)):
            fail("runbooks", "deploy/prometheus/alerts.yml", f"{rule['alert']}: {document} does not exist")
            continue
        anchors = {slug(h) for h in re.findall(r"^#+ (.+)$", read(document), re.M)}
        if anchor not in anchors:
            fail("runbooks", "deploy/prometheus/alerts.yml", f"{rule['alert']}: {document} has no heading #{anchor}")


def main():
    jobs, events = known_codes()
    check_codes(jobs, events)
    check_metrics(exported_metrics())
    check_alerted()
    check_vhost()
    check_keda()
    check_runbooks()
    rules = ["codes", "metrics", "alerted", "vhost", "keda", "runbooks"]
    print(f"cross-file rules: {len(rules) - len(set(failures))} of {len(rules)} hold"
          + (f" ({len(failures)} failure(s))" if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
