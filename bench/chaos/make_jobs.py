#!/usr/bin/env python3
"""The jobs of a chaos run: make_jobs.py COUNT OUT.jsonl. Every 10th job has 3 recipients, every
token is distinct, and 1 % of the tokens start with `unregistered-` (the emulator answers
UNREGISTERED, so their expected outcome is invalid_token)."""
import json
import sys

jobs, path = int(sys.argv[1]), sys.argv[2]
with open(path, "w") as f:
    for j in range(1, jobs + 1):
        n = 3 if j % 10 == 0 else 1
        recipients = []
        for r in range(1, n + 1):
            token = f"chaos-{j:07d}-{r}"
            if (j * 7 + r) % 100 == 0:
                token = "unregistered-" + token
            recipients.append({"token": token})
        f.write(json.dumps({"job_id": f"chaos-{j:07d}", "app_id": "chaos-app", "message_type": "data",
                            "data": {"pushdata.job": str(j)}, "recipients": recipients}, separators=(",", ":")) + "\n")
