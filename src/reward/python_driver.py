# The worker of grpo's Python rewards (reward/python_reward.h), embedded in the grpo binary at build time:
# loads FUNCTION from the file PATH as verl does, then answers one JSON line per request line:
#   {"data_source", "solution_str", "ground_truth", "extra_info"} -> {"reward": x, "extra": {key: number}}
#   {"batch": [request, ...]} -> {"rewards": [x, ...], "extras": [{...}, ...]}  (the function takes lists)
#   a tool call {"tool_arguments": {...}, "max_chars": n} -> {"text": FUNCTION(**arguments) as text}, or
#   {"too_long": length} when the text has more than n characters (tools/python_tool.h)
#   any exception -> {"error": the last lines of its traceback}
# Usage: python3 -c DRIVER PATH FUNCTION KWARGS_JSON. What the function prints goes to stderr.
import importlib.util
import json
import math
import os
import sys
import traceback

protocol = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = sys.stderr


def last_lines():
    return "\n".join(traceback.format_exc().rstrip("\n").split("\n")[-12:])


path, name, kwargs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
function, load_error = None, None
try:
    spec = importlib.util.spec_from_file_location("custom_module", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["custom_module"] = module
    spec.loader.exec_module(module)
    if not hasattr(module, name):
        raise AttributeError(f"reward function '{name}' not found in '{path}'")
    function = getattr(module, name)
except BaseException:
    load_error = last_lines()


protocol.write(json.dumps({"ready": True}) + "\n")
protocol.flush()


def number(value):
    if hasattr(value, "item"):  # numpy and torch scalars
        value = value.item()
    if isinstance(value, (bool, int, float)):
        value = float(value)
        return value if math.isfinite(value) else None
    return None


def convert(result):
    """verl's reading of a result: a dict's "score" is the reward, its other numeric keys extras."""
    if isinstance(result, dict):
        extra = {}
        for key, value in result.items():
            if key != "score" and number(value) is not None:
                extra[key] = number(value)
        return float(result["score"]), extra
    if isinstance(result, (list, tuple)):
        return float(result[0]), {}
    return float(result), {}


def tool_text(result):
    if isinstance(result, str):
        return result
    if isinstance(result, (dict, list)):
        return json.dumps(result, ensure_ascii=False)
    return str(result)


def answer(request):
    if load_error is not None:
        return {"error": load_error}
    try:
        if "tool_arguments" in request:
            text = tool_text(function(**request["tool_arguments"]))
            if len(text) > request["max_chars"]:
                return {"too_long": len(text)}
            return {"text": text}
        if "batch" in request:
            items = request["batch"]
            results = function(
                data_sources=[r["data_source"] for r in items],
                solution_strs=[r["solution_str"] for r in items],
                ground_truths=[r["ground_truth"] for r in items],
                extra_infos=[r["extra_info"] for r in items],
                **kwargs,
            )
            converted = [convert(r) for r in results]
            return {"rewards": [c[0] for c in converted], "extras": [c[1] for c in converted]}
        reward, extra = convert(function(
            data_source=request["data_source"],
            solution_str=request["solution_str"],
            ground_truth=request["ground_truth"],
            extra_info=request["extra_info"],
            **kwargs,
        ))
        return {"reward": reward, "extra": extra}
    except Exception:
        return {"error": last_lines()}


for line in sys.stdin:
    reply = answer(json.loads(line))
    try:
        text = json.dumps(reply, allow_nan=False)
    except ValueError:
        text = json.dumps({"error": "the reward is not a finite number: " + repr(reply)[:200]})
    protocol.write(text + "\n")
    protocol.flush()
