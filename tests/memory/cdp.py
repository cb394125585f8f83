"""A headless Chromium driven over the DevTools protocol on a pipe (no extra packages).

``load(path)`` opens a local HTML file in Debian's chromium (``--remote-debugging-pipe``:
the protocol's JSON messages, NUL-terminated, on file descriptors 3 and 4), waits for the
page's load event, and returns what the tests check: the console errors and uncaught
exceptions, the page's text, the value of a JavaScript expression, and a PNG screenshot.
"""
import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time

_STDERR = None if os.environ.get("EMBER_CDP_DEBUG") else subprocess.DEVNULL
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--remote-debugging-pipe"]


def chromium():
    """The browser's path, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _high(fds):
    out = []
    for fd in fds:
        out.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10))
        os.close(fd)
    return out


class Browser:
    def __init__(self, exe):
        self.profile = tempfile.mkdtemp(prefix="ember-chromium-")
        # the protocol wants its pipe on fds 3 and 4 exactly; the child's ends are first
        # moved to fds >= 10 (close-on-exec), so putting them on 3 and 4 clobbers nothing
        to_child_r, self._w = _high(os.pipe())
        self._r, from_child_w = _high(os.pipe())

        def on_3_and_4():
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)
        self.proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=_STDERR,
            close_fds=False, preexec_fn=on_3_and_4)
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf, self._id, self.events = b"", 0, []

    def _read(self, deadline):
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self._r, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, params=None, session=None, timeout=30):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read(deadline)
            if m.get("id") == self._id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, name, timeout=30):
        deadline = time.monotonic() + timeout
        for m in self.events:
            if m.get("method") == name:
                return m
        while True:
            m = self._read(deadline)
            self.events.append(m)
            if m.get("method") == name:
                return m

    def close(self):
        try:
            self.send("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._w)
        os.close(self._r)
        shutil.rmtree(self.profile, ignore_errors=True)


def load(path, expression="document.body.innerText", width=1200, height=1400):
    """Open `path`; return {"errors": [...], "value": expression's value, "png": bytes}."""
    b = Browser(chromium())
    try:
        target = b.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        sid = b.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            b.send(f"{domain}.enable", session=sid)
        b.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
               "deviceScaleFactor": 1, "mobile": False}, session=sid)
        b.send("Page.navigate", {"url": "file://" + os.path.abspath(path)}, session=sid)
        b.wait_event("Page.loadEventFired")
        value = b.send("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                       session=sid)["result"].get("value")
        png = base64.b64decode(b.send("Page.captureScreenshot", {"format": "png"},
                                      session=sid)["data"])
        errors = []
        for m in b.events:
            meth, p = m.get("method"), m.get("params", {})
            if meth == "Runtime.exceptionThrown":
                errors.append(p["exceptionDetails"].get("exception", {}).get(
                    "description", p["exceptionDetails"].get("text")))
            elif meth == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                errors.append(" ".join(str(a.get("value", a.get("description")))
                                       for a in p.get("args", [])))
            elif meth == "Log.entryAdded" and p["entry"].get("level") == "error":
                errors.append(p["entry"].get("text"))
        return {"errors": errors, "value": value, "png": png}
    finally:
        b.close()
