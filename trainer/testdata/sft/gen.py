#!/usr/bin/env python3
"""Writes the tiny SFT test corpus (deterministic; no third-party modules).

    python3 trainer/testdata/sft/gen.py trainer/testdata/sft
    for v in 320 512; do   # tok320: the fixture models' V; tiny/: testdata/sft/tiny's V
      d=trainer/testdata/sft/tok320; [ $v = 512 ] && d=trainer/testdata/sft/tiny
      go run ./cmd/train data bpe --out $d --vocab-size $v --system "You call tools." \
        trainer/testdata/sft/train.jsonl trainer/testdata/sft/val.jsonl
    done

Short Spanish requests over three small tools: a record renders to about
210 tokens with the 512-token BPE (tiny/, beside a qwen2 config.json without
weights, used with model.init: random) and about 420 with the 320-token BPE
(tok320/), which fits the fixture models of testdata/models (V = 320).
"""
import json, os, random, sys

TOOLS = {
    "weather": {"name": "weather", "description": "Weather in a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
    "send": {"name": "send", "description": "Send a message.",
             "parameters": {"type": "object", "properties": {"to": {"type": "string"}, "text": {"type": "string"}},
                            "required": ["to", "text"]}},
    "alarm": {"name": "alarm", "description": "Set an alarm.",
              "parameters": {"type": "object", "properties": {"time": {"type": "string"}}, "required": ["time"]}},
}
CITIES = ["Madrid", "Lima", "Quito", "Cádiz", "Roma", "Oslo", "Bogotá", "Cusco"]
NAMES = ["Ana", "Luis", "Eva", "Pablo", "Sara", "Tomás"]
TEXTS = ["llego tarde", "te quiero", "compra pan", "nos vemos hoy", "buen viaje"]
TIMES = ["06:30", "07:00", "08:15", "21:45", "05:50"]
CHAT = ["Hola, ¿cómo estás?", "Cuéntame un chiste.", "Gracias por todo."]


def record(rng, i, split, file):
    kind = rng.choice(["weather", "send", "alarm", "none"])
    tools = [TOOLS[kind]] if kind != "none" else [TOOLS[rng.choice(list(TOOLS))]]
    other = rng.choice([k for k in TOOLS if TOOLS[k] not in tools])
    if rng.random() < 0.5:
        tools = tools + [TOOLS[other]]
    if kind == "weather":
        c = rng.choice(CITIES)
        msg, calls = f"¿Qué tiempo hace en {c}?", [{"name": "weather", "arguments": {"city": c}}]
    elif kind == "send":
        n, t = rng.choice(NAMES), rng.choice(TEXTS)
        msg, calls = f"Dile a {n}: {t}", [{"name": "send", "arguments": {"to": n, "text": t}}]
    elif kind == "alarm":
        t = rng.choice(TIMES)
        msg, calls = f"Pon una alarma a las {t}", [{"name": "alarm", "arguments": {"time": t}}]
    else:
        msg, calls = rng.choice(CHAT), []
    return {"id": f"{file}-{i:03d}", "lang": "es", "tools": tools,
            "messages": [{"role": "user", "content": msg}], "calls": calls, "split": split}


def main(out):
    rng = random.Random(20240601)
    for split, file, n in (("train", "train", 24), ("validation", "val", 8)):
        with open(os.path.join(out, file + ".jsonl"), "w", encoding="utf-8") as f:
            for i in range(n):
                f.write(json.dumps(record(rng, i, split, file), ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
