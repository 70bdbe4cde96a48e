#!/usr/bin/env python3
"""The account of a chaos run (bench/chaos/run.sh): every recipient of every published job must
end with a result on push.results or inside a dead letter on push.jobs.dlq. Prints the figures
and exits 1 on any loss or unfinished work, 0 otherwise."""
import argparse
import collections
import json
import sys


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if line:
                yield number, line


def distribution(counter, keys):
    """{sends: recipients} over `keys`, with 0 for keys absent from `counter`."""
    d = collections.Counter(counter.get(k, 0) for k in keys)
    return dict(sorted(d.items()))


def fmt(d):
    return ", ".join(f"{k}: {v}" for k, v in d.items()) if d else "none"


def main():
    a = argparse.ArgumentParser()
    for name in ("jobs", "results", "dlq", "dlq-stats", "emulator-messages", "emulator-stats", "worker-logs",
                 "final-depths", "seed"):
        a.add_argument("--" + name, required=True)
    a.add_argument("--run-seconds", type=int, required=True)
    a.add_argument("--drained", type=int, required=True)
    a.add_argument("--unexpected-exits", type=int, required=True)
    a.add_argument("--published", type=int, required=True)
    a.add_argument("--dlq-depth", type=int, required=True)
    a.add_argument("--results-depth", type=int, required=True)
    a.add_argument("--publish-failures", type=int, required=True)
    args = a.parse_args()

    # What was published: token -> expected outcome.
    expected = {}
    jobs = 0
    for _, line in read_lines(args.jobs):
        jobs += 1
        for r in json.loads(line)["recipients"]:
            expected[r["token"]] = "invalid_token" if r["token"].startswith("unregistered") else "sent"
    to_send = [t for t, o in expected.items() if o == "sent"]

    # Results.
    results_per_token = collections.Counter()
    outcomes = collections.Counter()
    wrong_outcome = collections.Counter()
    unreadable_results = 0
    unknown_result_tokens = 0
    for _, line in read_lines(args.results):
        try:
            r = json.loads(line)
            token = r["target"]["token"]
            outcome = r["outcome"]
        except (ValueError, KeyError, TypeError):
            unreadable_results += 1
            continue
        outcomes[outcome] += 1
        if token not in expected:
            unknown_result_tokens += 1
            continue
        results_per_token[token] += 1
        if outcome != expected[token]:
            wrong_outcome[f"{expected[token]} -> {outcome}"] += 1

    # Dead letters: the recipients each one still holds.
    dlq_tokens = collections.Counter()
    dlq_messages = 0
    dlq_unreadable = 0
    dlq_codes = collections.Counter()
    for _, line in read_lines(args.dlq):
        dlq_messages += 1
        record = json.loads(line)
        code = record.get("headers", {}).get("push-error-code", {}).get("value", "(no push-error-code)")
        dlq_codes[code] += 1
        try:
            body = json.loads(record["body"]) if record.get("body_encoding") == "utf8" else None
            recipients = body.get("recipients", []) if isinstance(body, dict) else []
        except ValueError:
            recipients = []
        if not recipients:
            dlq_unreadable += 1
        for r in recipients:
            if isinstance(r, dict) and "token" in r:
                dlq_tokens[r["token"]] += 1
    try:
        with open(args.dlq_stats, encoding="utf-8") as f:
            dlq_stats = json.load(f)
    except ValueError:
        dlq_stats = {}

    # What FCM (the emulator) accepted, per token.
    with open(args.emulator_messages, encoding="utf-8") as f:
        recorded = json.load(f)["messages"]
    with open(args.emulator_stats, encoding="utf-8") as f:
        emulator_stats = json.load(f)
    totals = emulator_stats.get("totals", {})
    sends_per_token = collections.Counter(m.get("token") for m in recorded)
    ring_complete = len(recorded) == totals.get("sent", 0)

    lost = [t for t in expected if results_per_token[t] == 0 and dlq_tokens[t] == 0]
    duplicated = {t: n for t, n in results_per_token.items() if n > 1}
    both = [t for t in expected if results_per_token[t] > 0 and dlq_tokens[t] > 0]
    sent_without_send = [t for t in to_send if results_per_token[t] > 0 and sends_per_token[t] == 0]
    multi_sent = {t: n for t, n in sends_per_token.items() if n > 1}

    out = []
    p = out.append
    p("")
    p("==================== chaos run: account ====================")
    p(f"seed                      {args.seed}")
    p(f"published                 {args.published} of {jobs} jobs confirmed, {len(expected)} recipients "
      f"({len(to_send)} deliverable, {len(expected) - len(to_send)} unregistered tokens)")
    if args.publish_failures:
        p(f"  failed sends            {args.publish_failures} batch(es) had to be sent again (their jobs may exist twice)")
    p(f"work time                 {args.run_seconds} s from the workers' start to empty queues"
      + ("" if args.drained else "  (NOT DRAINED: time limit)"))
    with open(args.final_depths, encoding="utf-8") as f:
        depths = {name: int(n) for name, n in (line.split() for line in f if len(line.split()) == 2 and line.split()[1].isdigit())}
    queued = {q: n for q, n in depths.items() if (q == "push.jobs" or q.startswith("push.retry.")) and n > 0}
    if queued or not depths:
        p(f"  still queued            {fmt(queued) if depths else '(broker did not answer)'}")
    p(f"results                   {sum(outcomes.values())} read from push.results.stream (it held {args.results_depth})")
    p(f"  by outcome              {fmt(dict(sorted(outcomes.items())))}")
    if wrong_outcome:
        p(f"  WRONG outcome           {fmt(dict(wrong_outcome))}")
    if unreadable_results or unknown_result_tokens:
        p(f"  unreadable / unknown    {unreadable_results} / {unknown_result_tokens}")
    p(f"dead-lettered             {args.dlq_depth} message(s) in push.jobs.dlq; {dlq_messages} exported, holding "
      f"{sum(dlq_tokens.values())} recipient(s) ({len(dlq_tokens)} distinct)")
    p(f"  by code (dlq stats)     {fmt(dlq_stats.get('by_code', {})) if dlq_stats else 'dlq stats did not finish'}")
    p(f"  by code (export)        {fmt(dict(dlq_codes.most_common()))}")
    if dlq_unreadable:
        p(f"  without recipients      {dlq_unreadable} (not a job body)")
    p(f"lost                      {len(lost)} recipient(s) with neither a result nor a dead letter")
    if lost:
        p(f"  e.g.                    {', '.join(sorted(lost)[:10])}")
    p(f"duplicates                {len(duplicated)} recipient(s) with more than one result "
      f"(results per recipient: {fmt(distribution(results_per_token, expected))})")
    if both:
        p(f"  result AND dead letter  {len(both)} recipient(s), e.g. {', '.join(sorted(both)[:5])}")
    p("FCM sends per recipient   (accepted sends recorded by the emulator)")
    p(f"  deliverable recipients  {fmt(distribution(sends_per_token, to_send))}")
    p(f"  sent more than once     {len(multi_sent)} recipient(s)"
      + (f", at most {max(multi_sent.values())} times" if multi_sent else ""))
    if sent_without_send:
        p(f"  'sent' result, no send  {len(sent_without_send)} recipient(s)")
    if not ring_complete:
        p(f"  WARNING                 the record holds {len(recorded)} of {totals.get('sent', 0)} sends (ring too small)")
    p(f"emulator answers          {fmt(dict(sorted(totals.items())))}; tokens issued {emulator_stats.get('tokens_issued')}")
    p("worker logs               (warnings and errors; most frequent messages)")
    with open(args.worker_logs, encoding="utf-8") as f:
        for line in f:
            p(f"  {line.rstrip()}")
    p(f"worker exits by themselves {args.unexpected_exits}")

    failures = []
    if lost:
        failures.append(f"{len(lost)} recipient(s) lost")
    if not args.drained:
        failures.append("work unfinished at the time limit")
    if queued:
        failures.append(f"{sum(queued.values())} job message(s) still queued at the end")
    if args.dlq_depth < 0 or dlq_messages != args.dlq_depth:
        failures.append(f"the DLQ export read {dlq_messages} of {args.dlq_depth} dead letters: the account is incomplete")
    if args.results_depth < 0 or sum(outcomes.values()) + unreadable_results != args.results_depth:
        failures.append(f"read {sum(outcomes.values()) + unreadable_results} of {args.results_depth} results: the account is incomplete")
    if args.published != jobs:
        failures.append(f"only {args.published} of {jobs} jobs were published")
    if wrong_outcome:
        failures.append(f"{sum(wrong_outcome.values())} wrong outcome(s)")
    warnings = []
    if dlq_tokens:
        warnings.append(f"{len(dlq_tokens)} recipient(s) dead-lettered although every injected fault is transient")
    if multi_sent:
        warnings.append(f"{len(multi_sent)} recipient(s) got more than one push")
    p("VERDICT                   " + ("FAIL: " + "; ".join(failures) if failures else "PASS (no loss)"))
    for w in warnings:
        p(f"  note                    {w}")
    p("=============================================================")
    print("\n".join(out))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
