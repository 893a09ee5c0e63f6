# Writes qwen3_tool_turns.jsonl: conversations with tool calls rendered by Qwen3's own chat template
# (shared/models/qwen3-tokenizer) with Jinja2 set up as transformers' apply_chat_template sets it up
# (trim_blocks, lstrip_blocks, loop controls, tojson without ASCII escaping, key order kept), for
# tests/tools/test_chat_turns.cpp. Usage: python3 make_qwen3_tool_turns.py SHARED_DIR > qwen3_tool_turns.jsonl
import json
import sys

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


config = json.load(open(sys.argv[1] + "/models/qwen3-tokenizer/tokenizer_config.json"))
env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
template = env.from_string(config["chat_template"])

calculator = {"type": "function", "function": {
    "name": "calculator",
    "description": "Evaluate an arithmetic expression exactly: integers and decimals with + - * / ( ) and ^ for powers.",
    "parameters": {"type": "object",
                   "properties": {"expression": {"type": "string",
                                                 "description": "The expression, e.g. (1234 * 5678 - 90) / 3"}},
                   "required": ["expression"]}}}
search = {"type": "function", "function": {
    "name": "search", "description": "Search the web.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "k": {"type": "integer"}},
                   "required": ["query"]}}}


def call(name, arguments):
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


cases = [
    # (tools, user, first assistant turn, tool results)
    ([calculator], "Compute 1234*5678.",
     {"role": "assistant", "content": "", "tool_calls": [call("calculator", {"expression": "1234*5678"})]},
     ["7006652"]),
    ([calculator, search], "Who is older, and by how much?",
     {"role": "assistant", "content": "Let me look both up.",
      "tool_calls": [call("search", {"query": "Ada Lovelace born", "k": 2}), call("search", {"query": "Babbage born"})]},
     ["Ada Lovelace: born 10 December 1815", "Charles Babbage: born 26 December 1791"]),
]

for tools, user, assistant, results in cases:
    head = [{"role": "user", "content": user}]
    tool_messages = [{"role": "tool", "content": r} for r in results]
    render = lambda messages, gen: template.render(messages=messages, tools=tools, add_generation_prompt=gen,
                                                   enable_thinking=False)
    print(json.dumps({
        "tools": tools, "messages": head, "assistant": assistant, "results": results,
        "prompt": render(head, True),                               # the prompt with the generation prompt
        "with_assistant": render(head + [assistant], False),        # ... and the assistant turn, last
        "with_tools": render(head + [assistant] + tool_messages, True),  # ... and the tool turn, then generation
    }, ensure_ascii=False))
