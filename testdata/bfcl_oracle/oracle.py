#!/usr/bin/env python3
"""Score predictions with BFCL's own AST checker, as an oracle for argrl's bfcl reward.

A local check, never run by `go test`. It contains none of BFCL's code: it imports
the checker from a checkout or extraction of ShishirPatil/gorilla given on the
command line, stubbing the one module the AST checker imports but does not use
(bfcl_eval.constants.model_config, which pulls in every model handler).

    oracle.py --bfcl-root DIR --records R.jsonl --predictions P.jsonl [--format pythonic] > verdicts.jsonl

DIR holds bfcl_eval/ (berkeley-function-call-leaderboard in the repository).
R is what `train data convert --from bfcl` wrote; each record's "bfcl" field
carries the category, functions and ground truth. P has {"id","text"} lines in
the tool_call format. Output: one {"id","valid","error_type"} line per prediction.

The response is decoded as argrl's tool_call format reads it (every
<tool_call>...</tool_call> block holds a JSON call or a list of calls; anything
malformed is a decoding failure), or with --format pythonic as a Python list of
calls with literal keyword arguments, read with Python's ast the way BFCL's
prompting handlers read it (constants, negated constants, lists, tuples, dicts);
the verdict then follows eval_runner: the relevance categories by decoding
alone, the others through ast_checker.
"""
import ast
import argparse
import json
import re
import sys
import types


def load_checker(root):
    sys.path.insert(0, root)
    stub = types.ModuleType("bfcl_eval.constants.model_config")

    class Config:  # function names keep their dots
        underscore_to_dot = False

    stub.MODEL_CONFIG_MAPPING = {"argrl/oracle": Config()}
    sys.modules["bfcl_eval.constants.model_config"] = stub
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
    return ast_checker, Language


BLOCK = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


def decode(text):
    """Calls as [{name: {arg: value}}], or raise ValueError."""
    bodies = BLOCK.findall(text)
    rest = BLOCK.sub("", text)
    if "<tool_call>" in rest or "</tool_call>" in rest:
        raise ValueError("unbalanced <tool_call> tags")
    out = []
    for body in bodies:
        obj = json.loads(body)
        for call in obj if isinstance(obj, list) else [obj]:
            if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
                raise ValueError("a call needs a name")
            args = call.get("arguments", call.get("parameters"))
            if args is None:
                args = {}
            if not isinstance(args, dict):
                raise ValueError("arguments must be an object")
            out.append({call["name"]: args})
    return out


def py_value(node):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return -node.operand.value
    if isinstance(node, ast.List):
        return [py_value(e) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(py_value(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return {py_value(k): py_value(v) for k, v in zip(node.keys, node.values)}
    raise ValueError("not a literal")


def decode_pythonic(text):
    body = ast.parse(text.strip(), mode="eval").body
    if not isinstance(body, ast.List):
        raise ValueError("not a list of calls")
    out = []
    for call in body.elts:
        if not isinstance(call, ast.Call) or call.args:
            raise ValueError("not a keyword call")
        parts, f = [], call.func
        while isinstance(f, ast.Attribute):
            parts.append(f.attr)
            f = f.value
        parts.append(f.id)
        out.append({".".join(reversed(parts)): {k.arg: py_value(k.value) for k in call.keywords}})
    return out


def verdict(checker, Language, rec, text, fmt="tool_call"):
    case = rec["bfcl"]
    cat = case["category"]
    try:
        calls = decode_pythonic(text) if fmt == "pythonic" else decode(text)
        decoded = True
    except Exception:
        calls, decoded = [], False
    if "relevance" in cat:
        has_call = decoded and len(calls) > 0
        if "irrelevance" in cat:
            return (True, "") if not has_call else (False, "irrelevance_error:decoder_success")
        return (True, "") if has_call else (False, "relevance_error:decoder_failed")
    if not decoded:
        return False, "ast_decoder:decoder_failed"
    lang = Language.JAVASCRIPT if "javascript" in cat else Language.JAVA if "java" in cat else Language.PYTHON
    try:
        r = checker(case["functions"], calls, case["ground_truth"], lang, cat, "argrl/oracle")
    except Exception as e:
        return False, "checker_error:" + type(e).__name__
    return bool(r["valid"]), "" if r["valid"] else r.get("error_type", "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bfcl-root", required=True)
    ap.add_argument("--records", required=True)
    ap.add_argument("--predictions", required=True)
    ap.add_argument("--format", default="tool_call", choices=["tool_call", "pythonic"])
    a = ap.parse_args()
    checker, Language = load_checker(a.bfcl_root)
    recs = {}
    with open(a.records) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                recs[r["id"]] = r
    with open(a.predictions) as f:
        for line in f:
            if not line.strip():
                continue
            p = json.loads(line)
            ok, et = verdict(checker, Language, recs[p["id"]], p["text"], a.format)
            print(json.dumps({"id": p["id"], "valid": ok, "error_type": et}))


if __name__ == "__main__":
    main()
