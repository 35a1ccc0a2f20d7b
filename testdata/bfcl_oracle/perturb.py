#!/usr/bin/env python3
"""Write perturbed tool_call predictions from argrl BFCL records (a local check).

    perturb.py --records R.jsonl --out-dir DIR --prefix NAME [--offset N] [--format pythonic]

For each kind below, DIR/NAME.KIND.jsonl gets at most one {"id","text"} line per
record (none where the kind does not apply to that record):

  gold           the record's gold calls
  type           one argument's value of another JSON type (10 -> 10.0 or "10", ...)
  string         one string argument re-cased, re-punctuated or changed
  drop_optional  a parameter the function does not require left out
  drop_required  a required parameter left out
  extra          an undeclared parameter, or a declared one the gold lacks, added
  reorder        arguments and calls in reverse order
  rename         the first call's function renamed (or another listed function)
  nocall         a plain-text answer
  call           a call of a listed function (relevance categories)
  nested         an element inside a list or dict argument changed, dropped or added
  literal        a Java or JavaScript literal rewritten in another syntax
  tuples         (pythonic only) the gold calls with every list written as a tuple

With --format pythonic the texts are Python call lists, [f(a=1.0, b='x')].
"""
import argparse
import json
import os

KINDS = ["gold", "type", "string", "drop_optional", "drop_required", "extra", "reorder", "rename", "nocall", "call",
         "nested", "literal", "tuples"]


def render(calls):
    return "\n".join("<tool_call>" + json.dumps({"name": n, "arguments": a}) + "</tool_call>" for n, a in calls)


def py_literal(v, tuples=False):
    if isinstance(v, list):
        items = [py_literal(e, tuples) for e in v]
        if tuples:
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return "[" + ", ".join(items) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(repr(k) + ": " + py_literal(e, tuples) for k, e in v.items()) + "}"
    return repr(v)


def render_pythonic(calls, tuples=False):
    return "[" + ", ".join(n + "(" + ", ".join(k + "=" + py_literal(v, tuples) for k, v in a.items()) + ")" for n, a in calls) + "]"


def functions(rec):
    fns = rec["bfcl"]["functions"]
    return fns if isinstance(fns, list) else [fns]


def fdoc(rec, name):
    for f in functions(rec):
        if f.get("name") == name:
            return f
    return {"parameters": {"properties": {}, "required": []}}


def other_type(v, i):
    if isinstance(v, bool):
        return int(v) if i % 2 == 0 else str(v).lower()
    if isinstance(v, int):
        return float(v) if i % 2 == 0 else str(v)
    if isinstance(v, float):
        return repr(v) if i % 2 == 0 else int(round(v))
    if isinstance(v, str):
        for conv in (int, float):
            try:
                return conv(v)
            except ValueError:
                pass
        return [v] if i % 2 == 0 else len(v)
    if isinstance(v, list):
        return ", ".join(map(str, v)) if i % 2 == 0 else {"items": v}
    if isinstance(v, dict):
        return [v] if i % 2 == 0 else json.dumps(v)
    return 0


def other_string(s, i):
    k = i % 6
    if k == 0:
        return s.upper()
    if k == 1:
        return s.replace(" ", "-") + "."
    if k == 2:
        return s + "x"
    if k == 3:
        return "'" + s + "'"
    if k == 4:
        return s[1:]
    return " " + s.title() + " "


def mutate_nested(v, i):
    """Change one element inside a list or dict; None when v has none."""
    if isinstance(v, list) and v:
        v = list(v)
        j = i % len(v)
        op = (i // len(v)) % 4
        if op == 0:
            v[j] = other_string(v[j], i) if isinstance(v[j], str) else other_type(v[j], i)
        elif op == 1:
            del v[j]
        elif op == 2:
            v.append(v[j])
        else:
            inner = mutate_nested(v[j], i // 4)
            if inner is None:
                v[j] = other_type(v[j], i)
            else:
                v[j] = inner
        return v
    if isinstance(v, dict) and v:
        v = dict(v)
        keys = list(v)
        k = keys[i % len(keys)]
        op = (i // len(keys)) % 4
        if op == 0:
            v[k] = other_string(v[k], i) if isinstance(v[k], str) else other_type(v[k], i)
        elif op == 1:
            del v[k]
        elif op == 2:
            v["argrl_key"] = v[k]
        else:
            inner = mutate_nested(v[k], i // 4)
            v[k] = other_type(v[k], i) if inner is None else inner
        return v
    return None


JAVA_REWRITES = [("new ArrayList<>(Arrays.asList(", "new ArrayList<String>(Arrays.asList("), ("Arrays.asList(", "List.of("),
                 ("new HashMap<String, Object>() {{ ", "new HashMap<>() {{"), ("; }}", ";}}"), ("new int[]{", "new int[] { "),
                 ("new String[]{", "new String[] {"), ("true", "TRUE"), ("L", "l"), ("f", "F"), (", ", ","), ('"', "'")]
JS_REWRITES = [("[", "new Array("), ('"', "'"), (", ", ","), ("true", "True"), (".0", ""), ("{", "{ "), (": ", ":")]


def rewrite_literal(s, rules, i):
    for k in range(len(rules)):
        old, new = rules[(i + k) % len(rules)]
        if old in s:
            out = s.replace(old, new, 1)
            if old == "[" and new.startswith("new Array"):
                out = out[: out.rfind("]")] + ")" + out[out.rfind("]") + 1:] if "]" in out else out
            return out
    return None


def sample_value(prop):
    t = prop.get("type")
    return {"integer": 1, "float": 1.5, "boolean": True, "array": [], "tuple": [], "dict": {}}.get(t, "value")


def kind_calls(kind, rec, i):
    gold = [(c["name"], dict(c["arguments"])) for c in rec["calls"]]
    if kind in ("gold", "tuples"):
        return gold
    if kind == "nocall":
        return None
    if kind == "call":
        f = (functions(rec) or [{"name": "unlisted_function"}])[0]
        p = f.get("parameters", {})
        props = p.get("properties", {})
        return [(f["name"], {r: sample_value(props.get(r, {})) for r in p.get("required", [])})]
    if not gold:
        return "skip"
    name, args = gold[0]
    keys = list(args)
    doc = fdoc(rec, name)
    required = doc.get("parameters", {}).get("required", [])
    props = doc.get("parameters", {}).get("properties", {})
    if kind == "type":
        if not keys:
            return "skip"
        k = keys[i % len(keys)]
        args[k] = other_type(args[k], i // len(keys))
    elif kind == "string":
        strs = [k for k in keys if isinstance(args[k], str)]
        if not strs:
            return "skip"
        k = strs[i % len(strs)]
        args[k] = other_string(args[k], i)
    elif kind == "drop_optional":
        opt = [k for k in keys if k not in required]
        if not opt:
            return "skip"
        del args[opt[i % len(opt)]]
    elif kind == "drop_required":
        req = [k for k in keys if k in required]
        if not req:
            return "skip"
        del args[req[i % len(req)]]
    elif kind == "extra":
        absent = [k for k in props if k not in args]
        if absent and i % 2 == 1:
            k = absent[i % len(absent)]
            args[k] = sample_value(props[k])
        else:
            args["argrl_extra"] = "x"
    elif kind == "nested":
        cands = [k for k in keys if mutate_nested(args[k], i) is not None]
        if not cands:
            return "skip"
        k = cands[i % len(cands)]
        args[k] = mutate_nested(args[k], i // len(cands))
    elif kind == "literal":
        cat = rec["bfcl"]["category"]
        rules = JS_REWRITES if "javascript" in cat else JAVA_REWRITES if "java" in cat else None
        cands = [k for k in keys if isinstance(args[k], str) and rules and rewrite_literal(args[k], rules, i) is not None]
        if not cands:
            return "skip"
        k = cands[i % len(cands)]
        args[k] = rewrite_literal(args[k], rules, i)
    elif kind == "reorder":
        return [(n, dict(reversed(list(a.items())))) for n, a in reversed(gold)]
    elif kind == "rename":
        others = [f["name"] for f in functions(rec) if f.get("name") != name]
        name = others[i % len(others)] if others and i % 2 == 1 else name + "_v2"
    return [(name, args)] + gold[1:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--offset", type=int, default=0, help="shifts which argument and which variant each record gets")
    ap.add_argument("--format", default="tool_call", choices=["tool_call", "pythonic"])
    a = ap.parse_args()
    recs = [json.loads(l) for l in open(a.records) if l.strip()]
    for kind in KINDS:
        lines = []
        for i, rec in enumerate(recs):
            rel = "relevance" in rec["bfcl"]["category"]
            if (rel and kind not in ("nocall", "call")) or (not rel and kind == "call"):
                continue
            if kind == "tuples" and a.format != "pythonic":
                continue
            calls = kind_calls(kind, rec, i + a.offset)
            if calls == "skip":
                continue
            if calls is None:
                text = "I cannot help with that using the available functions."
            elif a.format == "pythonic":
                text = render_pythonic(calls, kind == "tuples")
            else:
                text = render(calls)
            lines.append(json.dumps({"id": rec["id"], "text": text}))
        if lines:
            with open(os.path.join(a.out_dir, a.prefix + "." + kind + ".jsonl"), "w") as f:
                f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
