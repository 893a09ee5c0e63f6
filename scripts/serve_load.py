#!/usr/bin/env python3
"""Load for an OpenAI-compatible server (`grpo serve`, llama.cpp's llama-server): C concurrent clients, each
sending R streamed completions of T tokens (ignore_eos, so every reply has T tokens), one after the other.
Prints one JSON line: output tokens/s over the run, and the time to the first token (median, p99) in seconds.
A reply's tokens are its usage's completion_tokens (stream_options.include_usage), else the token ids its
chunks carry (grpo's extension), else its chunks with text. Standard library only.
Usage: scripts/serve_load.py URL --clients C [--requests R] [--tokens T] [--prompt TEXT]"""
import argparse
import http.client
import json
import statistics
import threading
import time
import urllib.parse


def one_request(url, body):
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    start = time.perf_counter()
    c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError(f"{url}: HTTP {r.status}: {r.read()[:300]!r}")
    first, ids, texts, usage = None, 0, 0, None
    for line in r:  # server-sent events, one "data: {...}" line each
        if not line.startswith(b"data: {"):
            continue
        chunk = json.loads(line[6:])
        if chunk.get("usage"):
            usage = chunk["usage"]["completion_tokens"]
        for choice in chunk.get("choices", []):
            if choice.get("token_ids") or choice.get("text"):
                first = first or time.perf_counter()
                ids += len(choice.get("token_ids") or [])
                texts += 1 if choice.get("text") else 0
    c.close()
    return (first - start if first else float("nan")), usage if usage is not None else (ids or texts)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("--clients", type=int, required=True)
    p.add_argument("--requests", type=int, default=4)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--prompt", default="Once upon a time")
    a = p.parse_args()
    ttfts, total, lock = [], [0], threading.Lock()

    def client(k):
        for i in range(a.requests):
            body = {"prompt": f"{a.prompt} {k} {i}", "max_tokens": a.tokens, "stream": True, "ignore_eos": True,
                    "seed": k * 1000 + i, "stream_options": {"include_usage": True}}
            ttft, n = one_request(a.url, body)
            with lock:
                ttfts.append(ttft)
                total[0] += n

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(a.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    ttfts.sort()
    print(json.dumps({"clients": a.clients, "requests": len(ttfts), "tokens": total[0],
                      "output_tokens_per_s": round(total[0] / elapsed, 1),
                      "ttft_median_s": round(statistics.median(ttfts), 4),
                      "ttft_p99_s": round(ttfts[min(len(ttfts) - 1, int(0.99 * len(ttfts)))], 4)}))


if __name__ == "__main__":
    main()
