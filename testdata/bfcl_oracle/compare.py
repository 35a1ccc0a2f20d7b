#!/usr/bin/env python3
"""Compare `train reward --reward bfcl` lines with oracle.py verdicts (a local check).

    compare.py OURS.jsonl ORACLE.jsonl

Prints one JSON line: {"n", "verdict_agree", "error_type_agree", "oracle_valid",
"disagreements": [first few]}; exit status 1 when a verdict differs.
"""
import json
import sys

ours = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
orac = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
assert len(ours) == len(orac), (len(ours), len(orac))
agree = et_agree = valid = 0
bad = []
for o, r in zip(ours, orac):
    assert o["id"] == r["id"]
    ok = o["reward"] == 1
    valid += r["valid"]
    et = "" if ok else o.get("gate", "")
    if ok == r["valid"]:
        agree += 1
        if et == r["error_type"]:
            et_agree += 1
        elif len(bad) < 5:
            bad.append({"id": o["id"], "ours": et, "oracle": r["error_type"]})
    elif len(bad) < 5:
        bad.append({"id": o["id"], "ours": [ok, et], "oracle": [r["valid"], r["error_type"]]})
print(json.dumps({"n": len(ours), "verdict_agree": agree, "error_type_agree": et_agree, "oracle_valid": valid, "disagreements": bad}))
sys.exit(0 if agree == len(ours) else 1)
