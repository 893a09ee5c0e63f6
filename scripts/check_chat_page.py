#!/usr/bin/env python3
"""The chat page of `grpo serve` in headless Chromium (Debian's chromium), driven over the DevTools protocol
on a pipe (--remote-debugging-pipe, no extra Python packages): opens URL, types a message into the page's
input, clicks Send, and watches the reply stream in until the page marks it done. Prints one JSON line
{"reply", "stats", "states", "done"} (states: the distinct reply texts seen while it streamed) and exits 0
when the reply ended with a measured tokens/s, 1 otherwise, 2 when chromium is missing.
Usage: scripts/check_chat_page.py URL [MESSAGE]"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


class Browser:
    def __init__(self, chromium, profile):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def child_fds():  # the protocol's pipe: Chromium reads fd 3 and writes fd 4
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--user-data-dir=" + profile, "--remote-debugging-pipe", "about:blank"]
        self.proc = subprocess.Popen([chromium] + flags, preexec_fn=child_fds, pass_fds=(3, 4, to_chrome_r, from_chrome_w),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.next_id, self.buffer = 0, b""

    def call(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        while True:  # messages are NUL-terminated JSON; events are skipped
            while b"\0" not in self.buffer:
                chunk = os.read(self.from_chrome, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self.buffer += chunk
            raw, self.buffer = self.buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def close(self):
        try:
            self.call("Browser.close")
        except RuntimeError:
            pass
        self.proc.wait(timeout=10)


def main():
    url, message = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "hello"
    chromium = shutil.which("chromium")
    if not chromium:
        print("chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as profile:
        b = Browser(chromium, profile)
        try:
            target = b.call("Target.createTarget", {"url": url})["targetId"]
            session = b.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

            def js(expr):
                return b.call("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session)["result"].get("value")

            deadline = time.time() + 30
            while time.time() < deadline and not js("document.readyState === 'complete' && !!document.getElementById('input')"):
                time.sleep(0.05)
            js("document.getElementById('input').focus()")
            b.call("Input.insertText", {"text": message}, session)  # typed, as a user would
            js("document.getElementById('send').click()")
            states, state = [], {}
            deadline = time.time() + 120
            while time.time() < deadline:
                state = js("JSON.stringify({reply: (document.querySelector('.assistant') || {}).textContent || '', "
                           "stats: document.getElementById('stats').textContent, "
                           "done: document.getElementById('stats').dataset.done === '1'})")
                state = json.loads(state)
                if not states or states[-1] != state["reply"]:
                    states.append(state["reply"])
                if state["done"]:
                    break
                time.sleep(0.02)
        finally:
            b.close()
    rate = state.get("stats", "").split("tokens/s: ")[-1].split(",")[0]
    print(json.dumps({"reply": state.get("reply"), "stats": state.get("stats"), "states": len(states),
                      "done": state.get("done", False)}))
    return 0 if state.get("done") and rate not in ("", "-") else 1


if __name__ == "__main__":
    sys.exit(main())
